// The LAPACK library that cyxla's handlers call: found at run time with dlopen (never
// linked, never written by hand), once per process, and its routines as typed pointers.
#pragma once

#include <complex>
#include <string>
#include <string_view>
#include <vector>

namespace cyxla::lapack {

/// LAPACK's integer: cyxla calls the LP64 interface (32-bit integers), as jaxlib does.
using lapack_int = int;
/// The lengths of Fortran CHARACTER arguments, which gfortran's ABI passes after the
/// others; a LAPACK written in C ignores them.
using char_length = size_t;

using c64 = std::complex<float>;
using c128 = std::complex<double>;

/// The routines of one element type T (float, double, c64, c128), R its real type.
template <typename T, typename R>
struct Routines {
  using Getrf = void(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda,
                     lapack_int* ipiv, lapack_int* info);
  using Potrf = void(const char* uplo, const lapack_int* n, T* a, const lapack_int* lda,
                     lapack_int* info, char_length);
  using Geqrf = void(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda,
                     T* tau, T* work, const lapack_int* lwork, lapack_int* info);
  /// orgqr for real types, ungqr for complex ones.
  using Orgqr = void(const lapack_int* m, const lapack_int* n, const lapack_int* k, T* a,
                     const lapack_int* lda, const T* tau, T* work, const lapack_int* lwork,
                     lapack_int* info);
  using Trsm = void(const char* side, const char* uplo, const char* transa, const char* diag,
                    const lapack_int* m, const lapack_int* n, const T* alpha, const T* a,
                    const lapack_int* lda, T* b, const lapack_int* ldb, char_length,
                    char_length, char_length, char_length);

  using Gehrd = void(const lapack_int* n, const lapack_int* ilo, const lapack_int* ihi, T* a,
                     const lapack_int* lda, T* tau, T* work, const lapack_int* lwork,
                     lapack_int* info);
  /// sytrd for real types, hetrd for complex ones.
  using Sytrd = void(const char* uplo, const lapack_int* n, T* a, const lapack_int* lda, R* d,
                     R* e, T* tau, T* work, const lapack_int* lwork, lapack_int* info,
                     char_length);
  using Gtsv = void(const lapack_int* n, const lapack_int* nrhs, T* dl, T* d, T* du, T* b,
                    const lapack_int* ldb, lapack_int* info);
  /// ormqr for real types, unmqr for complex ones.
  using Ormqr = void(const char* side, const char* trans, const lapack_int* m,
                     const lapack_int* n, const lapack_int* k, const T* a, const lapack_int* lda,
                     const T* tau, T* c, const lapack_int* ldc, T* work, const lapack_int* lwork,
                     lapack_int* info, char_length, char_length);

  Getrf* getrf = nullptr;
  Potrf* potrf = nullptr;
  Geqrf* geqrf = nullptr;
  Orgqr* orgqr = nullptr;
  Trsm* trsm = nullptr;
  Gehrd* gehrd = nullptr;
  Sytrd* sytrd = nullptr;
  Gtsv* gtsv = nullptr;
  Ormqr* ormqr = nullptr;
};

/// syevd (real) and heevd (complex) differ in their arguments, as do gesdd's.
struct RealOnly {
  template <typename T>
  using Syevd = void(const char* jobz, const char* uplo, const lapack_int* n, T* a,
                     const lapack_int* lda, T* w, T* work, const lapack_int* lwork,
                     lapack_int* iwork, const lapack_int* liwork, lapack_int* info, char_length,
                     char_length);
  template <typename T>
  using Gesdd = void(const char* jobz, const lapack_int* m, const lapack_int* n, T* a,
                     const lapack_int* lda, T* s, T* u, const lapack_int* ldu, T* vt,
                     const lapack_int* ldvt, T* work, const lapack_int* lwork, lapack_int* iwork,
                     lapack_int* info, char_length);
  template <typename T>
  using Geqp3 = void(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda,
                     lapack_int* jpvt, T* tau, T* work, const lapack_int* lwork, lapack_int* info);
  template <typename T>
  using Gesvd = void(const char* jobu, const char* jobvt, const lapack_int* m, const lapack_int* n,
                     T* a, const lapack_int* lda, T* s, T* u, const lapack_int* ldu, T* vt,
                     const lapack_int* ldvt, T* work, const lapack_int* lwork, lapack_int* info,
                     char_length, char_length);
  template <typename T>
  using Geev = void(const char* jobvl, const char* jobvr, const lapack_int* n, T* a,
                    const lapack_int* lda, T* wr, T* wi, T* vl, const lapack_int* ldvl, T* vr,
                    const lapack_int* ldvr, T* work, const lapack_int* lwork, lapack_int* info,
                    char_length, char_length);
  /// `select` and `bwork` are unused (null) without sorting, the one mode JAX asks for.
  template <typename T>
  using Gees = void(const char* jobvs, const char* sort, void* select, const lapack_int* n, T* a,
                    const lapack_int* lda, lapack_int* sdim, T* wr, T* wi, T* vs,
                    const lapack_int* ldvs, T* work, const lapack_int* lwork, void* bwork,
                    lapack_int* info, char_length, char_length);
};
struct ComplexOnly {
  template <typename T, typename R>
  using Heevd = void(const char* jobz, const char* uplo, const lapack_int* n, T* a,
                     const lapack_int* lda, R* w, T* work, const lapack_int* lwork, R* rwork,
                     const lapack_int* lrwork, lapack_int* iwork, const lapack_int* liwork,
                     lapack_int* info, char_length, char_length);
  template <typename T, typename R>
  using Gesdd = void(const char* jobz, const lapack_int* m, const lapack_int* n, T* a,
                     const lapack_int* lda, R* s, T* u, const lapack_int* ldu, T* vt,
                     const lapack_int* ldvt, T* work, const lapack_int* lwork, R* rwork,
                     lapack_int* iwork, lapack_int* info, char_length);
  template <typename T, typename R>
  using Geqp3 = void(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda,
                     lapack_int* jpvt, T* tau, T* work, const lapack_int* lwork, R* rwork,
                     lapack_int* info);
  template <typename T, typename R>
  using Gesvd = void(const char* jobu, const char* jobvt, const lapack_int* m, const lapack_int* n,
                     T* a, const lapack_int* lda, R* s, T* u, const lapack_int* ldu, T* vt,
                     const lapack_int* ldvt, T* work, const lapack_int* lwork, R* rwork,
                     lapack_int* info, char_length, char_length);
  template <typename T, typename R>
  using Geev = void(const char* jobvl, const char* jobvr, const lapack_int* n, T* a,
                    const lapack_int* lda, T* w, T* vl, const lapack_int* ldvl, T* vr,
                    const lapack_int* ldvr, T* work, const lapack_int* lwork, R* rwork,
                    lapack_int* info, char_length, char_length);
  template <typename T, typename R>
  using Gees = void(const char* jobvs, const char* sort, void* select, const lapack_int* n, T* a,
                    const lapack_int* lda, lapack_int* sdim, T* w, T* vs, const lapack_int* ldvs,
                    T* work, const lapack_int* lwork, R* rwork, void* bwork, lapack_int* info,
                    char_length, char_length);
};

/// Every routine cyxla's handlers call, by element type.
struct Library {
  std::string path;    // the file it was loaded from, as dlopen resolved it
  std::string prefix;  // of its symbols: "" or "scipy_" (SciPy's OpenBLAS)
  Routines<float, float> s;
  Routines<double, double> d;
  Routines<c64, float> c;
  Routines<c128, double> z;
  RealOnly::Syevd<float>* ssyevd = nullptr;
  RealOnly::Syevd<double>* dsyevd = nullptr;
  ComplexOnly::Heevd<c64, float>* cheevd = nullptr;
  ComplexOnly::Heevd<c128, double>* zheevd = nullptr;
  RealOnly::Gesdd<float>* sgesdd = nullptr;
  RealOnly::Gesdd<double>* dgesdd = nullptr;
  ComplexOnly::Gesdd<c64, float>* cgesdd = nullptr;
  ComplexOnly::Gesdd<c128, double>* zgesdd = nullptr;
  RealOnly::Gesvd<float>* sgesvd = nullptr;
  RealOnly::Gesvd<double>* dgesvd = nullptr;
  ComplexOnly::Gesvd<c64, float>* cgesvd = nullptr;
  ComplexOnly::Gesvd<c128, double>* zgesvd = nullptr;
  RealOnly::Geqp3<float>* sgeqp3 = nullptr;
  RealOnly::Geqp3<double>* dgeqp3 = nullptr;
  ComplexOnly::Geqp3<c64, float>* cgeqp3 = nullptr;
  ComplexOnly::Geqp3<c128, double>* zgeqp3 = nullptr;
  RealOnly::Geev<float>* sgeev = nullptr;
  RealOnly::Geev<double>* dgeev = nullptr;
  ComplexOnly::Geev<c64, float>* cgeev = nullptr;
  ComplexOnly::Geev<c128, double>* zgeev = nullptr;
  RealOnly::Gees<float>* sgees = nullptr;
  RealOnly::Gees<double>* dgees = nullptr;
  ComplexOnly::Gees<c64, float>* cgees = nullptr;
  ComplexOnly::Gees<c128, double>* zgees = nullptr;
};

/// The environment variable that names the LAPACK library to use (a file, or a name
/// that dlopen finds); set, it is the only candidate.
inline constexpr std::string_view kLibraryVariable = "CYXLA_LAPACK";

/// The library, found on first use (and never unloaded): the library $CYXLA_LAPACK
/// names; else the one the host preferred (prefer_library); else a LAPACK already
/// loaded in the process; else the system's, by soname. Returns null and sets `why`
/// (what was tried, and how to get one) when none has every routine. Thread-safe; after
/// the first success it is one atomic load.
const Library* library(std::string* why) noexcept;

/// Where the host knows a LAPACK to prefer (the Python package: the OpenBLAS that SciPy
/// carries, which jaxlib calls): tried after $CYXLA_LAPACK, before any other. Has no
/// effect once a library was found.
void prefer_library(std::string path);

/// The candidates library() tries, in order, as it would try them now (for messages and
/// tests): each a path or soname.
std::vector<std::string> candidates();

}  // namespace cyxla::lapack
