/* Test-only stand-in for Windows' bcryptprimitives.dll under Wine 8, which
 * lacks ProcessPrng. Rust's standard library (1.78 and later) imports it
 * to seed HashMap keys and the like, so without it no Rust program starts
 * under Wine 8. It fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036). Never shipped: .ci/windows builds it beside the
 * test binaries only. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
