//! Files and directories only their owner may read: the runtime directory
//! (tokens), the pairing, secrets, profiles. On Unix that is the owner's
//! uid and mode bits (0700, 0600).

use std::fs::OpenOptions;
use std::path::Path;

/// Creates `dir` and its missing parents, the new ones readable by their
/// owner only.
///
/// # Errors
/// What the file system says.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    imp::create_private_dir(dir)
}

/// Options that create a file readable by its owner only (the caller adds
/// read, write, create, truncate as needed).
pub fn private_file_options() -> OpenOptions {
    imp::private_file_options()
}

/// `Err(why, in words)` unless `path` (a file or directory) belongs to
/// this user and no one else may read it; `fix` names the command that
/// makes it so.
///
/// # Errors
/// Why it is not private, or why it cannot be checked.
pub fn check_private(path: &Path) -> Result<(), String> {
    imp::check_private(path)
}

/// Who may read `path`, in a few words for `doctor` (such as `mode 700`).
pub fn access_of(path: &Path) -> String {
    imp::access_of(path)
}

#[cfg(unix)]
mod imp {
    use std::fs::OpenOptions;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::path::Path;

    pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }

    pub fn private_file_options() -> OpenOptions {
        let mut options = OpenOptions::new();
        options.mode(0o600);
        options
    }

    pub fn check_private(path: &Path) -> Result<(), String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
        let me = super::super::process::user_id();
        if meta.uid() != me {
            return Err(format!(
                "it belongs to user {}, not to you ({me})",
                meta.uid()
            ));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            let wanted = if meta.is_dir() { 700 } else { 600 };
            return Err(format!(
                "other users may read it (mode {mode:o}); run: chmod {wanted} {}",
                path.display()
            ));
        }
        Ok(())
    }

    pub fn access_of(path: &Path) -> String {
        std::fs::metadata(path)
            .map(|meta| format!("mode {:o}", meta.permissions().mode() & 0o777))
            .unwrap_or_else(|e| format!("unreadable: {e}"))
    }
}

/// On Windows "only its owner" is an access list: a directory of ours gets
/// a protected one (nothing inherited from above) that lets in this user
/// and the system account, and its files inherit it. A path is private
/// when every entry that lets anyone in names this user, the system
/// account or the administrators (who can read everything anyway).
#[cfg(windows)]
mod imp {
    use std::fs::OpenOptions;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::{null, null_mut};

    use windows_sys::Win32::Foundation::{CloseHandle, ERROR_SUCCESS, HANDLE, LocalFree};
    use windows_sys::Win32::Security::Authorization::{
        ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
        GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT, SetNamedSecurityInfoW,
    };
    use windows_sys::Win32::Security::{
        ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, EqualSid, GetAce,
        GetSecurityDescriptorDacl, GetTokenInformation, IsWellKnownSid,
        PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY, TOKEN_USER,
        TokenUser, WinBuiltinAdministratorsSid, WinLocalSystemSid,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    /// `ACCESS_ALLOWED_ACE_TYPE`.
    const ACCESS_ALLOWED: u8 = 0;

    fn wide(path: &Path) -> Vec<u16> {
        path.as_os_str().encode_wide().chain(Some(0)).collect()
    }

    /// This user's SID, in the token's buffer.
    struct UserSid {
        buffer: Vec<u64>,
    }

    impl UserSid {
        fn current() -> std::io::Result<Self> {
            let mut token: HANDLE = null_mut();
            // SAFETY: the pseudo-handle of this process and an out-pointer.
            if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut buffer = vec![0u64; 64];
            let mut needed = 0u32;
            // SAFETY: the buffer is 512 bytes, aligned for TOKEN_USER, and its size is given.
            let ok = unsafe {
                GetTokenInformation(
                    token,
                    TokenUser,
                    buffer.as_mut_ptr().cast(),
                    (buffer.len() * 8) as u32,
                    &mut needed,
                )
            };
            let error = std::io::Error::last_os_error();
            // SAFETY: the token was opened above.
            unsafe { CloseHandle(token) };
            if ok == 0 {
                return Err(error);
            }
            Ok(Self { buffer })
        }

        fn sid(&self) -> PSID {
            // SAFETY: the buffer holds a TOKEN_USER written by GetTokenInformation.
            unsafe { (*self.buffer.as_ptr().cast::<TOKEN_USER>()).User.Sid }
        }

        fn to_text(&self) -> std::io::Result<String> {
            let mut text: *mut u16 = null_mut();
            // SAFETY: a valid SID; the string is freed with LocalFree below.
            if unsafe { ConvertSidToStringSidW(self.sid(), &mut text) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: a NUL-terminated string from ConvertSidToStringSidW.
            let length = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
            // SAFETY: `length` characters were just counted.
            let sid = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
            // SAFETY: allocated by ConvertSidToStringSidW.
            unsafe { LocalFree(text.cast()) };
            Ok(sid)
        }
    }

    /// Gives `path` a protected access list: this user and the system
    /// account, inherited by what is created in it.
    fn restrict(path: &Path) -> std::io::Result<()> {
        let user = UserSid::current()?.to_text()?;
        let sddl: Vec<u16> = format!("D:P(A;OICI;FA;;;{user})(A;OICI;FA;;;SY)")
            .encode_utf16()
            .chain(Some(0))
            .collect();
        let mut descriptor: PSECURITY_DESCRIPTOR = null_mut();
        // SAFETY: a NUL-terminated SDDL string; the descriptor is freed below.
        if unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut descriptor,
                null_mut(),
            )
        } == 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let (mut present, mut defaulted) = (0, 0);
        let mut dacl: *mut ACL = null_mut();
        // SAFETY: the descriptor was made above.
        let found = unsafe {
            GetSecurityDescriptorDacl(descriptor, &mut present, &mut dacl, &mut defaulted)
        };
        let result = if found == 0 {
            Err(std::io::Error::last_os_error())
        } else {
            let name = wide(path);
            // SAFETY: a NUL-terminated path and the DACL of a live descriptor.
            let status = unsafe {
                SetNamedSecurityInfoW(
                    name.as_ptr(),
                    SE_FILE_OBJECT,
                    DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                    null_mut(),
                    null_mut(),
                    dacl,
                    null(),
                )
            };
            if status == ERROR_SUCCESS {
                Ok(())
            } else {
                Err(std::io::Error::from_raw_os_error(status as i32))
            }
        };
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(descriptor.cast()) };
        result
    }

    pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        let existed = dir.is_dir();
        std::fs::create_dir_all(dir)?;
        if existed {
            return Ok(());
        }
        restrict(dir)
    }

    pub fn private_file_options() -> OpenOptions {
        // Files inherit the access list of the private directory they are in.
        OpenOptions::new()
    }

    /// Who the entries of `path`'s access list let in, other than this
    /// user, the system account and the administrators: `Ok(0)` when no one.
    fn others_let_in(path: &Path) -> std::io::Result<usize> {
        let user = UserSid::current()?;
        let name = wide(path);
        let mut dacl: *mut ACL = null_mut();
        let mut descriptor: PSECURITY_DESCRIPTOR = null_mut();
        // SAFETY: a NUL-terminated path and out-pointers; the descriptor is freed below.
        let status = unsafe {
            GetNamedSecurityInfoW(
                name.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                null_mut(),
                null_mut(),
                &mut dacl,
                null_mut(),
                &mut descriptor,
            )
        };
        if status != ERROR_SUCCESS {
            return Err(std::io::Error::from_raw_os_error(status as i32));
        }
        let mut others = 0;
        if dacl.is_null() {
            // No access list at all: everyone may.
            others = 1;
        } else {
            // SAFETY: a DACL from GetNamedSecurityInfoW, alive with the descriptor.
            let count = unsafe { (*dacl).AceCount };
            for index in 0..u32::from(count) {
                let mut ace: *mut core::ffi::c_void = null_mut();
                // SAFETY: `index` is below the ACL's count.
                if unsafe { GetAce(dacl, index, &mut ace) } == 0 {
                    continue;
                }
                // SAFETY: every ACE starts with its header.
                let header = unsafe { *ace.cast::<ACE_HEADER>() };
                if header.AceType != ACCESS_ALLOWED {
                    continue;
                }
                // SAFETY: an access-allowed ACE; its SID starts at SidStart.
                let sid: PSID =
                    unsafe { (&raw mut (*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart).cast() };
                // SAFETY: valid SIDs.
                let trusted = unsafe {
                    EqualSid(sid, user.sid()) != 0
                        || IsWellKnownSid(sid, WinLocalSystemSid) != 0
                        || IsWellKnownSid(sid, WinBuiltinAdministratorsSid) != 0
                };
                if !trusted {
                    others += 1;
                }
            }
        }
        // SAFETY: allocated by GetNamedSecurityInfoW.
        unsafe { LocalFree(descriptor.cast()) };
        Ok(others)
    }

    pub fn check_private(path: &Path) -> Result<(), String> {
        match others_let_in(path) {
            Ok(0) => Ok(()),
            Ok(others) => Err(format!(
                "its access list lets in {others} other account(s) besides you, SYSTEM and the administrators; \
                 remove them in its Properties → Security"
            )),
            Err(error) => Err(format!("cannot read its access list: {error}")),
        }
    }

    pub fn access_of(path: &Path) -> String {
        match others_let_in(path) {
            Ok(0) => "only you (and SYSTEM, administrators)".into(),
            Ok(others) => format!("{others} other account(s) may read it"),
            Err(error) => format!("access list unreadable: {error}"),
        }
    }
}
