//! Directories and files that only their owner can read: the runtime
//! directory (tokens), the profile (cookies), secrets and pairings.
//!
//! * **Unix**: directories are created with mode 0700 and files with 0600;
//!   "private" means owned by us with no group or other bits.
//! * **Windows**: a directory we create gets a protected DACL (inheritance
//!   from its parent cut) with one entry: full control for the current
//!   user, inherited by everything created inside, so files there need
//!   nothing of their own. "Private" means that no allow entry of the
//!   DACL names anyone but us, SYSTEM or the Administrators group (who can
//!   read every file anyway).

use std::fs::OpenOptions;
use std::path::Path;

/// Creates `dir` and its parents, when missing, private to this user.
///
/// # Errors
/// When it cannot be created or (Windows) its access cannot be restricted.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    imp::create_private_dir(dir)
}

/// Makes `options` create files readable by their owner only (mode 0600
/// on Unix; on Windows the file inherits its private directory's ACL).
pub fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    imp::private_file(options)
}

/// Why others may read `path` (or it is not ours), as a sentence and the
/// command that fixes it; `None` when it is private.
pub fn exposure(path: &Path) -> Option<Exposure> {
    imp::exposure(path)
}

/// How a path is exposed to others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// What is wrong ("others may read it (mode 644)").
    pub problem: String,
    /// A command or step that fixes it.
    pub fix: String,
}

/// How `path` may be read, for `doctor` ("mode 700", "only you").
pub fn describe_access(path: &Path) -> String {
    imp::describe_access(path)
}

#[cfg(unix)]
mod imp {
    use std::fs::OpenOptions;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    use std::path::Path;

    use super::Exposure;

    pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }

    pub(super) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
        options.mode(0o600)
    }

    pub(super) fn exposure(path: &Path) -> Option<Exposure> {
        let Ok(metadata) = std::fs::metadata(path) else {
            return None;
        };
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        if metadata.uid() != uid {
            return Some(Exposure {
                problem: format!("it belongs to user {}, not to you ({uid})", metadata.uid()),
                fix: format!(
                    "use a file or directory of your own instead of {}",
                    path.display()
                ),
            });
        }
        let mode = metadata.mode() & 0o777;
        (mode & 0o077 != 0).then(|| Exposure {
            problem: format!("others may read it (mode {mode:o})"),
            fix: format!(
                "chmod {} {}",
                if metadata.is_dir() { 700 } else { 600 },
                path.display()
            ),
        })
    }

    pub(super) fn describe_access(path: &Path) -> String {
        let mode = std::fs::metadata(path)
            .map(|m| m.mode() & 0o777)
            .unwrap_or(0);
        format!("mode {mode:o}")
    }
}

#[cfg(windows)]
mod imp {
    use std::ffi::c_void;
    use std::fs::OpenOptions;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, LocalFree};
    use windows_sys::Win32::Security::Authorization::{
        ConvertSidToStringSidW, EXPLICIT_ACCESS_W, GetNamedSecurityInfoW, SE_FILE_OBJECT,
        SET_ACCESS, SetEntriesInAclW, SetNamedSecurityInfoW, TRUSTEE_IS_SID, TRUSTEE_IS_USER,
        TRUSTEE_W,
    };
    use windows_sys::Win32::Security::{
        ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, ACL_SIZE_INFORMATION, AclSizeInformation,
        DACL_SECURITY_INFORMATION, EqualSid, GetAce, GetAclInformation, GetTokenInformation,
        INHERIT_ONLY_ACE, IsWellKnownSid, PROTECTED_DACL_SECURITY_INFORMATION,
        SUB_CONTAINERS_AND_OBJECTS_INHERIT, TOKEN_QUERY, TOKEN_USER, TokenUser,
        WinBuiltinAdministratorsSid, WinLocalSystemSid,
    };
    use windows_sys::Win32::Storage::FileSystem::FILE_ALL_ACCESS;
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    use super::Exposure;

    /// `ACCESS_ALLOWED_ACE_TYPE`.
    const ACCESS_ALLOWED: u8 = 0;

    pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(dir)?;
        restrict_to_current_user(dir)
    }

    pub(super) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
        options
    }

    pub(super) fn exposure(path: &Path) -> Option<Exposure> {
        match others_allowed(path) {
            Ok(others) if others.is_empty() => None,
            Ok(others) => Some(Exposure {
                problem: format!(
                    "other users may read it (its access list also allows {})",
                    others.join(", ")
                ),
                fix: format!(
                    "icacls \"{}\" /inheritance:r /grant:r \"%USERNAME%\":F",
                    path.display()
                ),
            }),
            Err(error) => Some(Exposure {
                problem: format!("its access list cannot be read: {error}"),
                fix: format!("check who may read {} (icacls)", path.display()),
            }),
        }
    }

    pub(super) fn describe_access(path: &Path) -> String {
        match others_allowed(path) {
            Ok(others) if others.is_empty() => "only you may read it".into(),
            Ok(others) => format!("others may read it ({})", others.join(", ")),
            Err(error) => format!("access unknown: {error}"),
        }
    }

    /// `path` as a NUL-terminated UTF-16 string.
    fn wide(path: &Path) -> Vec<u16> {
        path.as_os_str()
            .encode_wide()
            .chain(std::iter::once(0))
            .collect()
    }

    /// The current user's SID, in a buffer that holds a `TOKEN_USER`.
    struct UserSid {
        /// The `TOKEN_USER` bytes; the SID points into them. `u64`s keep
        /// the structure aligned.
        buffer: Vec<u64>,
    }

    impl UserSid {
        fn current() -> std::io::Result<Self> {
            let mut token: HANDLE = std::ptr::null_mut();
            // SAFETY: the pseudo-handle of our process; `token` is writable.
            if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &raw mut token) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut needed = 0u32;
            // SAFETY: asks for the size only.
            unsafe {
                GetTokenInformation(token, TokenUser, std::ptr::null_mut(), 0, &raw mut needed);
            }
            let mut buffer = vec![0u64; (needed as usize).div_ceil(8).max(1)];
            let size = u32::try_from(buffer.len() * 8).map_err(std::io::Error::other)?;
            // SAFETY: `buffer` holds `size` writable bytes, aligned for TOKEN_USER.
            let read = unsafe {
                GetTokenInformation(
                    token,
                    TokenUser,
                    buffer.as_mut_ptr().cast(),
                    size,
                    &raw mut needed,
                )
            };
            let error = std::io::Error::last_os_error();
            // SAFETY: the token handle is ours to close.
            unsafe { CloseHandle(token) };
            if read == 0 {
                return Err(error);
            }
            Ok(Self { buffer })
        }

        fn sid(&self) -> *mut c_void {
            // SAFETY: the buffer holds a TOKEN_USER filled by GetTokenInformation.
            unsafe { (*self.buffer.as_ptr().cast::<TOKEN_USER>()).User.Sid }
        }
    }

    /// Replaces `path`'s DACL by one entry, full control for this user,
    /// inherited by all it contains, and cuts inheritance from above.
    fn restrict_to_current_user(path: &Path) -> std::io::Result<()> {
        let user = UserSid::current()?;
        let access = EXPLICIT_ACCESS_W {
            grfAccessPermissions: FILE_ALL_ACCESS,
            grfAccessMode: SET_ACCESS,
            grfInheritance: SUB_CONTAINERS_AND_OBJECTS_INHERIT,
            Trustee: TRUSTEE_W {
                pMultipleTrustee: std::ptr::null_mut(),
                MultipleTrusteeOperation: 0,
                TrusteeForm: TRUSTEE_IS_SID,
                TrusteeType: TRUSTEE_IS_USER,
                ptstrName: user.sid().cast(),
            },
        };
        let mut acl: *mut ACL = std::ptr::null_mut();
        // SAFETY: one valid entry, no old ACL; `acl` receives a LocalAlloc'd ACL.
        let status =
            unsafe { SetEntriesInAclW(1, &raw const access, std::ptr::null(), &raw mut acl) };
        if status != 0 {
            return Err(std::io::Error::from_raw_os_error(status as i32));
        }
        let name = wide(path);
        // SAFETY: `name` is NUL-terminated; `acl` is a valid ACL freed below.
        let status = unsafe {
            SetNamedSecurityInfoW(
                name.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                acl,
                std::ptr::null(),
            )
        };
        // SAFETY: allocated by SetEntriesInAclW with LocalAlloc.
        unsafe { LocalFree(acl.cast()) };
        if status != 0 {
            return Err(std::io::Error::from_raw_os_error(status as i32));
        }
        Ok(())
    }

    /// Who besides us, SYSTEM and the Administrators group `path`'s DACL
    /// allows in (their SIDs; a missing DACL allows everyone).
    fn others_allowed(path: &Path) -> std::io::Result<Vec<String>> {
        let user = UserSid::current()?;
        let name = wide(path);
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let mut descriptor: *mut c_void = std::ptr::null_mut();
        // SAFETY: `name` is NUL-terminated; the outputs are writable; the
        // descriptor is freed below and `dacl` points into it.
        let status = unsafe {
            GetNamedSecurityInfoW(
                name.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &raw mut dacl,
                std::ptr::null_mut(),
                &raw mut descriptor,
            )
        };
        if status != 0 {
            return Err(std::io::Error::from_raw_os_error(status as i32));
        }
        let result = if dacl.is_null() {
            Ok(vec!["everyone (it has no access list)".to_owned()])
        } else {
            // SAFETY: `dacl` is a valid ACL inside `descriptor`.
            unsafe { others_in(dacl, user.sid()) }
        };
        // SAFETY: allocated by GetNamedSecurityInfoW with LocalAlloc.
        unsafe { LocalFree(descriptor) };
        result
    }

    /// The SIDs that allow entries of `dacl` name besides `me`, SYSTEM
    /// and Administrators.
    ///
    /// # Safety
    /// `dacl` must be a valid ACL and `me` a valid SID.
    unsafe fn others_in(dacl: *mut ACL, me: *mut c_void) -> std::io::Result<Vec<String>> {
        // SAFETY: all-zero is a valid ACL_SIZE_INFORMATION.
        let mut size: ACL_SIZE_INFORMATION = unsafe { std::mem::zeroed() };
        let length =
            u32::try_from(size_of::<ACL_SIZE_INFORMATION>()).map_err(std::io::Error::other)?;
        // SAFETY: `dacl` is valid (caller); `size` is writable and of that class.
        if unsafe { GetAclInformation(dacl, (&raw mut size).cast(), length, AclSizeInformation) }
            == 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let mut others = Vec::new();
        for index in 0..size.AceCount {
            let mut ace: *mut c_void = std::ptr::null_mut();
            // SAFETY: `index` is below the ACE count of a valid ACL.
            if unsafe { GetAce(dacl, index, &raw mut ace) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: every ACE starts with an ACE_HEADER.
            let header = unsafe { &*ace.cast::<ACE_HEADER>() };
            if header.AceType != ACCESS_ALLOWED
                || u32::from(header.AceFlags) & INHERIT_ONLY_ACE != 0
            {
                continue;
            }
            // SAFETY: an access-allowed ACE; its SID starts at SidStart.
            let sid =
                unsafe { (&raw mut (*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart).cast::<c_void>() };
            // SAFETY: both SIDs are valid.
            let trusted = unsafe {
                EqualSid(sid, me) != 0
                    || IsWellKnownSid(sid, WinLocalSystemSid) != 0
                    || IsWellKnownSid(sid, WinBuiltinAdministratorsSid) != 0
            };
            if !trusted {
                // SAFETY: a valid SID.
                others.push(unsafe { sid_text(sid) });
            }
        }
        Ok(others)
    }

    /// A SID as text (`S-1-1-0`), or a placeholder when it cannot be shown.
    ///
    /// # Safety
    /// `sid` must be a valid SID.
    unsafe fn sid_text(sid: *mut c_void) -> String {
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: `sid` is valid (caller); `text` receives a LocalAlloc'd string.
        if unsafe { ConvertSidToStringSidW(sid, &raw mut text) } == 0 || text.is_null() {
            return "a SID that cannot be shown".into();
        }
        // SAFETY: a NUL-terminated UTF-16 string from ConvertSidToStringSidW.
        let length = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
        // SAFETY: `length` units were just read.
        let shown = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
        // SAFETY: allocated by ConvertSidToStringSidW with LocalAlloc.
        unsafe { LocalFree(text.cast()) };
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_directory_and_its_files_are_private() {
        let base = tempfile::tempdir().expect("temp dir");
        let dir = base.path().join("a").join("b");
        create_private_dir(&dir).expect("create");
        assert_eq!(exposure(&dir), None, "{}", describe_access(&dir));
        let file = dir.join("token");
        private_file(OpenOptions::new().write(true).create(true))
            .open(&file)
            .expect("open");
        assert_eq!(exposure(&file), None, "{}", describe_access(&file));
    }
}
