/* A stand-in for Windows' bcryptprimitives.dll under Wine 8.0, which lacks it:
 * Go >= 1.24 binaries need its ProcessPrng before main. It answers with
 * RtlGenRandom. Used by scripts/wine-test.sh only; nothing ships it. */
#include <windows.h>
/* ProcessPrng, which Go >= 1.24 needs and Wine 8.0 lacks: RtlGenRandom. */
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n; len -= n;
  }
  return TRUE;
}
