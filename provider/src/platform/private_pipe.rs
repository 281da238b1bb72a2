//! Named pipes only this user may open (Windows; on Unix the socket's
//! mode and its private directory do this job).
//!
//! A pipe created with no security attributes gets the default security
//! descriptor, whose DACL also lets Everyone and Anonymous open it for
//! reading: any process of any user could then speak to the shell's
//! native messaging socket. Every instance of the pipe is created with
//! [`PipeSecurity::current_user`] instead: a protected DACL
//! (`D:P(A;;GA;;;<your SID>)(A;;GA;;;SY)`) that allows only the user the
//! shell runs as and SYSTEM, and inherits nothing.
//!
//! Why the user's SID and not `OW` (OWNER RIGHTS, S-1-3-4): an `OW` entry
//! allows whoever *owns* the pipe, and the owner of an object an elevated
//! administrator's process creates is the Administrators group by default,
//! not the user; the native messaging host Chrome starts runs
//! unelevated, as the user. The user's SID says exactly who may open it.

use std::ffi::{OsStr, c_void};

use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, LocalFree};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER, TokenUser,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// A security descriptor that lets only the current user and SYSTEM open
/// a named pipe; freed when dropped.
#[derive(Debug)]
pub struct PipeSecurity {
    /// The self-relative descriptor `LocalAlloc`ed by
    /// `ConvertStringSecurityDescriptorToSecurityDescriptorW`; never
    /// written after it was made.
    descriptor: *mut c_void,
}

// SAFETY: the descriptor is memory of our own, read-only once made; the
// system only reads it (when a pipe instance is created).
unsafe impl Send for PipeSecurity {}
// SAFETY: as above: shared reads only.
unsafe impl Sync for PipeSecurity {}

impl PipeSecurity {
    /// The descriptor for the user this process runs as.
    ///
    /// # Errors
    /// When the process token or the descriptor cannot be read or made.
    pub fn current_user() -> std::io::Result<Self> {
        let sddl = Self::sddl()?;
        let wide: Vec<u16> = sddl.encode_utf16().chain(std::iter::once(0)).collect();
        let mut descriptor: *mut c_void = std::ptr::null_mut();
        // SAFETY: `wide` is NUL-terminated; `descriptor` receives a
        // LocalAlloc'd descriptor, freed on drop.
        let made = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                wide.as_ptr(),
                SDDL_REVISION_1,
                &raw mut descriptor,
                std::ptr::null_mut(),
            )
        };
        if made == 0 || descriptor.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { descriptor })
    }

    /// The descriptor as SDDL: a protected DACL allowing all access to the
    /// current user and to SYSTEM (`SY`), nobody else.
    ///
    /// # Errors
    /// When the process token cannot be read.
    pub fn sddl() -> std::io::Result<String> {
        Ok(format!("D:P(A;;GA;;;{})(A;;GA;;;SY)", current_user_sid()?))
    }

    /// Creates a pipe instance named `name` with `options` and this
    /// descriptor.
    ///
    /// # Errors
    /// As [`ServerOptions::create`].
    pub fn create(
        &self,
        options: &ServerOptions,
        name: impl AsRef<OsStr>,
    ) -> std::io::Result<NamedPipeServer> {
        let mut attributes = SECURITY_ATTRIBUTES {
            nLength: u32::try_from(size_of::<SECURITY_ATTRIBUTES>())
                .map_err(std::io::Error::other)?,
            lpSecurityDescriptor: self.descriptor,
            bInheritHandle: 0,
        };
        // SAFETY: `attributes` is a valid SECURITY_ATTRIBUTES whose
        // descriptor lives as long as `self`; the call only reads it.
        unsafe { options.create_with_security_attributes_raw(name, (&raw mut attributes).cast()) }
    }
}

impl Drop for PipeSecurity {
    fn drop(&mut self) {
        // SAFETY: allocated with LocalAlloc by the conversion, freed once.
        unsafe { LocalFree(self.descriptor) };
    }
}

/// The SID of the user this process runs as, as text (`S-1-5-21-…`).
fn current_user_sid() -> std::io::Result<String> {
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
    // `u64`s keep the TOKEN_USER aligned.
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
    // SAFETY: the buffer holds a TOKEN_USER filled by GetTokenInformation.
    let sid = unsafe { (*buffer.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    // SAFETY: `sid` points into `buffer`, alive here.
    unsafe { sid_text(sid) }
}

/// `sid` as text.
///
/// # Safety
/// `sid` must be a valid SID.
pub(crate) unsafe fn sid_text(sid: *mut c_void) -> std::io::Result<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sid` is valid (caller); `text` receives a LocalAlloc'd string.
    if unsafe { ConvertSidToStringSidW(sid, &raw mut text) } == 0 || text.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated UTF-16 string from ConvertSidToStringSidW.
    let length = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
    // SAFETY: `length` units were just read.
    let shown = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
    // SAFETY: allocated by ConvertSidToStringSidW with LocalAlloc.
    unsafe { LocalFree(text.cast()) };
    Ok(shown)
}

/// The SIDs of the access-allowed entries of the DACL of the kernel
/// object behind `handle` (`None`: it has no DACL, everyone may open it).
#[cfg(test)]
pub(crate) fn allowed_sids(handle: HANDLE) -> Option<Vec<String>> {
    use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_KERNEL_OBJECT};
    use windows_sys::Win32::Security::{
        ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, ACL_SIZE_INFORMATION, AclSizeInformation,
        DACL_SECURITY_INFORMATION, GetAce, GetAclInformation,
    };

    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut descriptor: *mut c_void = std::ptr::null_mut();
    // SAFETY: `handle` is open; the outputs are writable; `dacl`
    // points into `descriptor`, freed below.
    let status = unsafe {
        GetSecurityInfo(
            handle,
            SE_KERNEL_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &raw mut dacl,
            std::ptr::null_mut(),
            &raw mut descriptor,
        )
    };
    assert_eq!(status, 0, "GetSecurityInfo");
    if dacl.is_null() {
        return None;
    }
    // SAFETY: all-zero is a valid ACL_SIZE_INFORMATION.
    let mut size: ACL_SIZE_INFORMATION = unsafe { std::mem::zeroed() };
    let length = u32::try_from(size_of::<ACL_SIZE_INFORMATION>()).expect("small");
    // SAFETY: `dacl` is valid; `size` is writable and of that class.
    let read =
        unsafe { GetAclInformation(dacl, (&raw mut size).cast(), length, AclSizeInformation) };
    assert_ne!(read, 0, "GetAclInformation");
    let mut sids = Vec::new();
    for index in 0..size.AceCount {
        let mut ace: *mut c_void = std::ptr::null_mut();
        // SAFETY: `index` is below the ACE count of a valid ACL.
        assert_ne!(unsafe { GetAce(dacl, index, &raw mut ace) }, 0, "GetAce");
        // SAFETY: every ACE starts with an ACE_HEADER.
        let header = unsafe { &*ace.cast::<ACE_HEADER>() };
        // ACCESS_ALLOWED_ACE_TYPE; denials narrow access, never widen it.
        if header.AceType != 0 {
            continue;
        }
        // SAFETY: an access-allowed ACE; its SID starts at SidStart.
        let sid =
            unsafe { (&raw mut (*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart).cast::<c_void>() };
        // SAFETY: a valid SID inside the ACE.
        sids.push(unsafe { sid_text(sid) }.expect("a SID as text"));
    }
    // SAFETY: allocated by GetSecurityInfo with LocalAlloc.
    unsafe { LocalFree(descriptor) };
    Some(sids)
}

#[cfg(test)]
mod tests {
    use std::os::windows::io::AsRawHandle;

    use super::*;

    #[tokio::test]
    async fn a_private_pipe_lets_in_only_its_user_and_system() {
        let me = current_user_sid().expect("the user's SID");
        let name = format!(r"\\.\pipe\browser-shell-test-{}", std::process::id());
        let security = PipeSecurity::current_user().expect("the descriptor");
        let server = security
            .create(ServerOptions::new().first_pipe_instance(true), &name)
            .expect("the pipe");
        let allowed = allowed_sids(server.as_raw_handle().cast()).expect("the pipe has a DACL");
        assert!(allowed.contains(&me), "{allowed:?} lacks {me}");
        for sid in &allowed {
            // Only the user and SYSTEM (S-1-5-18): not Everyone (S-1-1-0),
            // Anonymous (S-1-5-7), Administrators or anyone else.
            assert!(sid == &me || sid == "S-1-5-18", "{sid} in {allowed:?}");
        }
        // The user still opens it.
        let client = tokio::net::windows::named_pipe::ClientOptions::new()
            .open(&name)
            .expect("the user opens the pipe");
        drop(client);
    }

    /// What the descriptor is for, and proof that the check above can
    /// fail where it runs (Wine included): a pipe made without it lets
    /// Everyone (S-1-1-0) open it.
    #[tokio::test]
    async fn a_pipe_made_without_it_lets_everyone_in() {
        let name = format!(
            r"\\.\pipe\browser-shell-test-default-{}",
            std::process::id()
        );
        let server = ServerOptions::new()
            .first_pipe_instance(true)
            .create(&name)
            .expect("the pipe");
        let allowed = allowed_sids(server.as_raw_handle().cast());
        assert!(
            allowed
                .as_ref()
                .is_none_or(|sids| sids.iter().any(|sid| sid == "S-1-1-0")),
            "{allowed:?}"
        );
    }
}
