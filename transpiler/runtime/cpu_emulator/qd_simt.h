// qd_simt.h: run the transpiler's CUDA (and HIP) output unchanged on the CPU.
//
// A wrapper translation unit includes this header, then the generated .cu/.hip file, then
// one QD_EMU_ENTRY(name) per entry point. The scheduler itself (fibers, barriers, the
// watchdog) lives in qd_simt_rt.cpp, built once into a shared library the kernel links to,
// so that a kernel TU sees almost no libc names that could collide with kernel names.
//
// Execution model: the threads of one block run as fibers on one OS thread, switched only
// at barriers, warp collectives and (every few thousand iterations) loop back-edges; blocks
// run one after another in index order. A launch flagged QD_EMU_DIRECT (no thread of it can
// wait for another) runs each block's threads by plain calls instead, in index order. A
// plain module (QD_EMU_PLAIN, every task a loop whose elements never meet) maps the thread
// indices so that each call runs one element, from a runner loop the compiler vectorizes.
//
// What the preprocessor does to the generated text (the text itself is not touched):
//   - `__shared__` becomes a function-local `static` in section "qd_shared". One OS thread
//     runs one block at a time, so a static is exactly one instance per running block; the
//     section bounds let the scheduler fill it with garbage at each block start, as a GPU's.
//   - barriers and warp collectives are macros that pass __LINE__, so a deadlock names the
//     generated line, which carries its `// file.py:LINE` comment.
//   - `for` and `while` are macros that count iterations: every few thousand the fiber
//     yields (a thread spinning on another thread of its block lets it run) and polls the
//     watchdog (a spin on something that never happens is reported with its line).
//   - int32_t & co. are renamed, because a host header may already have declared int64_t
//     as `long` where the generated prelude says `long long`.
// It defines QD_SIMT_EMULATOR for templates that must spell something differently on the
// host (the PTX `asm` in the CUDA qd_half), and in HIP mode (-DQD_EMU_HIP) __HIPCC_RTC__,
// so the source takes its hipRTC branch and includes nothing.
#ifndef QD_SIMT_H
#define QD_SIMT_H

#define QD_SIMT_EMULATOR 1

#ifndef QD_EMU_WARP_SIZE
#ifdef QD_EMU_HIP
#define QD_EMU_WARP_SIZE 64
#else
#define QD_EMU_WARP_SIZE 32
#endif
#endif

// ----------------------------------------------------------------------------- runtime ABI
// Shared between the kernel TU and qd_simt_rt.cpp, with C linkage: the library is built
// once and serves every kernel.

extern "C" {

struct qd_emu_uint3 { unsigned x, y, z; };

// The lanes of one warp collective, handed to the collective's compute function when the
// last member arrives. `value`/`arg` hold each member's operands; it fills `result`.
struct qd_emu_lanes {
    unsigned long long members;   // lanes taking part (bit i = lane i)
    int width;                    // the shuffle segment width
    int warp_size;
    unsigned long long value[64];
    long long arg[64];
    unsigned long long result[64];
};
typedef void (*qd_emu_compute_fn)(qd_emu_lanes*);

// Launch configuration, filled by the kernel TU's launcher from the caller's int64 array.
struct qd_emu_config {
    long long grid[3], block[3];
    long long watchdog_ms;    // no progress for this long while looping: report a hang
    long long flags;          // QD_EMU_POISON_SHARED | QD_EMU_DIRECT
    long long first_block;    // run blocks [first_block, last_block) in linear order
    long long last_block;
    long long workers;        // > 1: OS threads that split the blocks, for a grid-free task
                              // (no barrier, collective, shared array, fence or print)
};
#define QD_EMU_POISON_SHARED 1
// No thread of the task waits for another (a grid-free task without loops that may spin or
// atomics that run in lockstep, see CpuBackend.load): each thread of a block runs to its end
// in turn, called directly on the OS thread's own stack, no fiber and no switch.
#define QD_EMU_DIRECT 2
// A plain module's launch (QD_EMU_PLAIN): a block that fails is run again by `call`, which
// runs the block's threads as `direct` does but keeps threadIdx up to date, so that the
// message names the thread (the vectorized `direct` keeps the element in a register).
#define QD_EMU_PLAIN_RERUN 4
// A plain module's reduction (a task whose epilogue folds one operation, see _plain): each OS
// thread calls it once for its whole share of blocks, qd_emu_share_blocks of them from
// blockIdx, so that it ends with one partial and one atomic.
#define QD_EMU_PLAIN_SHARE 8

// Status codes qd_emu_run returns; the message explains (generated lines as @L<n>@).
#define QD_EMU_OK 0
#define QD_EMU_DEADLOCK 1
#define QD_EMU_HANG 2
#define QD_EMU_TRAP 3
#define QD_EMU_SIGNAL 4
#define QD_EMU_BAD_LAUNCH 5

typedef void (*qd_emu_call_fn)(void* ctx);
// Runs every thread of the current block (blockIdx set), one after another (QD_EMU_DIRECT).
typedef void (*qd_emu_block_fn)(void* ctx);

int qd_emu_run(qd_emu_call_fn call, qd_emu_block_fn direct, void* ctx, const qd_emu_config* cfg, int warp_size,
               char* shared_begin, char* shared_end, char* err, int errlen);
int qd_emu_block_barrier(int line, const char* what, int pred);
// converge = 0: the lanes of `mask` take part (CUDA's *_sync). converge = 1: the lanes that
// reach this call before the rest of the warp is elsewhere (a GPU's active mask). converge
// = 2: the same, a lane spinning in a loop counting as elsewhere (lockstep atomics).
unsigned long long qd_emu_warp_op(int line, const char* what, unsigned long long mask, int converge,
                                  unsigned long long value, long long arg, int width, qd_emu_compute_fn fn);
void qd_emu_tick_slow(int line);
void qd_emu_yield(int line);
long long qd_emu_clock(void);  // clock64(): the running thread's own time in ns (see the runtime)
[[noreturn]] void qd_emu_trap(int line, const char* what);

// The hardware indices of the running fiber; the scheduler rewrites them at each switch. One
// set per OS thread (the workers of a parallel launch), initial-exec: the runtime's few bytes
// of TLS sit at a fixed offset from the thread pointer, a read costs what a global's does.
#define QD_EMU_TLS __thread __attribute__((tls_model("initial-exec")))
extern QD_EMU_TLS qd_emu_uint3 threadIdx, blockIdx, blockDim, gridDim;
extern QD_EMU_TLS unsigned qd_emu_ticks;
extern QD_EMU_TLS long long qd_emu_share_blocks;

}  // extern "C"

#ifndef QD_EMU_BUILDING_RUNTIME

#include <cmath>
#include <limits>
#include <bit>
#include <tuple>
#include <type_traits>
#include <utility>

// ----------------------------------------------------------------------------- types

// The fixed-width names the generated text uses are renamed, because a host header may have
// declared ::int64_t as `long` where the CUDA prelude (and hipRTC) say `long long`. Same
// types as the CUDA prelude, so its typedefs (and HIP's narrow ones) redeclare these.
typedef signed char qd_emu_int8_t;
typedef short qd_emu_int16_t;
typedef int qd_emu_int32_t;
typedef long long qd_emu_int64_t;
typedef unsigned char qd_emu_uint8_t;
typedef unsigned short qd_emu_uint16_t;
typedef unsigned int qd_emu_uint32_t;
typedef unsigned long long qd_emu_uint64_t;

typedef qd_emu_uint3 uint3;
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(qd_emu_uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

inline constexpr int warpSize = QD_EMU_WARP_SIZE;

// CUDA's 16-byte vector types, which the CUDA text reads ndarray elements through
// (reinterpret_cast<const float4*>(a)[q].x, after checking that a is 16-byte aligned).
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };

#ifndef QD_EMU_HIP
// IEEE binary16 with the CUDA prelude's interface (the prelude's version is PTX asm).
// Round to nearest even on the way in, exact on the way out.
struct qd_half {
    unsigned short bits;
    qd_half() = default;
    qd_half(float f) : bits(from_float(f)) {}
    operator float() const { return to_float(bits); }

    static unsigned short from_float(float f) {
        unsigned x = std::bit_cast<unsigned>(f);
        unsigned sign = (x >> 16) & 0x8000u;
        unsigned ax = x & 0x7fffffffu;
        if (ax >= 0x7f800000u)  // inf or nan (nan keeps a quiet payload bit)
            return (unsigned short)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
        if (ax >= 0x477ff000u)  // rounds to >= 65520: overflow to inf
            return (unsigned short)(sign | 0x7c00u);
        if (ax < 0x38800000u) {  // below the smallest normal half: subnormal or zero
            if (ax < 0x33000000u)  // below half the smallest subnormal: rounds to zero
                return (unsigned short)sign;
            unsigned mant = (ax & 0x7fffffu) | 0x800000u;
            int shift = 126 - (int)(ax >> 23);  // 14..24 bits to drop to reach 2^-24 units
            unsigned q = mant >> shift, rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
            q += (rem > halfway || (rem == halfway && (q & 1u)));
            return (unsigned short)(sign | q);
        }
        unsigned r = ax - 0x38000000u;  // rebias the exponent from 127 to 15
        unsigned q = r >> 13, rem = r & 0x1fffu;
        q += (rem > 0x1000u || (rem == 0x1000u && (q & 1u)));
        return (unsigned short)(sign | q);
    }
    static float to_float(unsigned short h) {
        unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
        if (e == 0) {
            float v = (float)m * 5.9604644775390625e-08f;  // m * 2^-24, exact
            return sign ? -v : v;
        }
        return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
    }
};
#endif

// ----------------------------------------------------------------------------- fences, misc

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> inline T __ldg(const T* p) { return *p; }
// CUDA's and HIP's 64-bit cycle counter: here nanoseconds of the thread's own running time,
// so the executor's clock_freq_hz is 1 GHz.
inline long long clock64() { return qd_emu_clock(); }
extern "C" int printf(const char* __restrict fmt, ...);

// ----------------------------------------------------------------------------- math

// CUDA declares the classification functions globally; <cmath> keeps them in std.
using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

// CUDA's integer and floating min/max overloads (host C++ has none in the global namespace).
#define QD_EMU_MINMAX(R, A, B)                                        \
    inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }      \
    inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
QD_EMU_MINMAX(int, int, int)
QD_EMU_MINMAX(unsigned, unsigned, unsigned)
QD_EMU_MINMAX(unsigned, int, unsigned)
QD_EMU_MINMAX(unsigned, unsigned, int)
QD_EMU_MINMAX(long, long, long)
QD_EMU_MINMAX(unsigned long, unsigned long, unsigned long)
QD_EMU_MINMAX(long long, long long, long long)
QD_EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
QD_EMU_MINMAX(unsigned long long, long long, unsigned long long)
QD_EMU_MINMAX(unsigned long long, unsigned long long, long long)
#undef QD_EMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }

// ----------------------------------------------------------------------------- bit casts and bits

inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __hiloint2double(int hi, int lo) {
    return std::bit_cast<double>(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}
inline int __double2hiint(double x) { return (int)(std::bit_cast<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return (int)std::bit_cast<unsigned long long>(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rn(float x) { return (int)rintf(x); }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline int __double2int_rz(double x) { return (int)x; }

inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero((unsigned)x); }
inline int __clzll(long long x) { return std::countl_zero((unsigned long long)x); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero((unsigned)x) + 1; }
inline int __ffs(unsigned x) { return x == 0 ? 0 : std::countr_zero(x) + 1; }
inline int __ffsll(long long x) { return x == 0 ? 0 : std::countr_zero((unsigned long long)x) + 1; }
inline int __ffsll(unsigned long long x) { return x == 0 ? 0 : std::countr_zero(x) + 1; }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)(v >> (s & 31));
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

// ----------------------------------------------------------------------------- atomics
// GCC/Clang __atomic builtins (what std::atomic_ref is made of, without <atomic>, which
// drags unistd.h and friends into the kernel's namespace). One OS thread runs a block, so
// relaxed order is enough; race-check builds ask for acq_rel so TSan sees the
// happens-before a GPU's fence + atomic pair gives.
#ifndef QD_EMU_ATOMIC_ORDER
#define QD_EMU_ATOMIC_ORDER __ATOMIC_RELAXED
#endif

namespace qd_emu {
#ifdef QD_EMU_PLAIN
// A prefetch pass (run_plain, QD_EMU_PREFETCH_ENTRY): every atomic only prefetches its element
// for writing and changes nothing; the same elements then run for real, their random misses
// already under way (a locked read-modify-write waits for its line, and x86 lets no later
// access start before it is done: one miss at a time). Such a task writes memory through
// atomics alone and never reads their results (see _prefetchable), so the pass reads what
// the real one reads and leaves no trace. A CAS loop's compare-and-swap returns what it
// expected, which ends the loop.
static __thread bool plain_prefetch;
template <class T>
inline bool prefetch_only(T* p) {
    if (!plain_prefetch) return false;
    __builtin_prefetch(p, 1);
    return true;
}
#else
template <class T>
constexpr bool prefetch_only(T*) { return false; }
#endif
template <class T, class F>
inline T atomic_rmw(T* p, F f) {
    if (prefetch_only(p)) return T{};
    using U = std::conditional_t<sizeof(T) == 8, unsigned long long,
              std::conditional_t<sizeof(T) == 4, unsigned, unsigned short>>;
    U* u = reinterpret_cast<U*>(p);
    U old = __atomic_load_n(u, QD_EMU_ATOMIC_ORDER);
    for (;;) {
        U nw = std::bit_cast<U>(static_cast<T>(f(std::bit_cast<T>(old))));
        if (__atomic_compare_exchange_n(u, &old, nw, true, QD_EMU_ATOMIC_ORDER, QD_EMU_ATOMIC_ORDER))
            return std::bit_cast<T>(old);
    }
}
template <class T>
inline T atomic_cas(T* p, T expected, T desired) {
    if (prefetch_only(p)) return expected;
    __atomic_compare_exchange_n(p, &expected, desired, false, QD_EMU_ATOMIC_ORDER, QD_EMU_ATOMIC_ORDER);
    return expected;  // the old value, whether or not it matched
}
}  // namespace qd_emu

#define QD_EMU_ATOMIC_SCOPES(NAME, T, PARAMS, BODY) \
    inline T NAME PARAMS BODY                       \
    inline T NAME##_block PARAMS BODY               \
    inline T NAME##_system PARAMS BODY
#define QD_EMU_ATOMIC_INT(T)                                                                          \
    QD_EMU_ATOMIC_SCOPES(atomicAdd, T, (T* p, T v), { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_add(p, v, QD_EMU_ATOMIC_ORDER); }) \
    QD_EMU_ATOMIC_SCOPES(atomicSub, T, (T* p, T v), { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_sub(p, v, QD_EMU_ATOMIC_ORDER); }) \
    QD_EMU_ATOMIC_SCOPES(atomicAnd, T, (T* p, T v), { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_and(p, v, QD_EMU_ATOMIC_ORDER); }) \
    QD_EMU_ATOMIC_SCOPES(atomicOr, T, (T* p, T v), { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_or(p, v, QD_EMU_ATOMIC_ORDER); })   \
    QD_EMU_ATOMIC_SCOPES(atomicXor, T, (T* p, T v), { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_xor(p, v, QD_EMU_ATOMIC_ORDER); }) \
    QD_EMU_ATOMIC_SCOPES(atomicExch, T, (T* p, T v), { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_exchange_n(p, v, QD_EMU_ATOMIC_ORDER); }) \
    QD_EMU_ATOMIC_SCOPES(atomicMin, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T o) { return o < v ? o : v; }); }) \
    QD_EMU_ATOMIC_SCOPES(atomicMax, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T o) { return o > v ? o : v; }); }) \
    QD_EMU_ATOMIC_SCOPES(atomicCAS, T, (T* p, T e, T v), { return qd_emu::atomic_cas(p, e, v); })
QD_EMU_ATOMIC_INT(int)
QD_EMU_ATOMIC_INT(unsigned)
QD_EMU_ATOMIC_INT(long long)
QD_EMU_ATOMIC_INT(unsigned long long)
QD_EMU_ATOMIC_SCOPES(atomicCAS, unsigned short, (unsigned short* p, unsigned short e, unsigned short v),
                     { return qd_emu::atomic_cas(p, e, v); })
QD_EMU_ATOMIC_SCOPES(atomicInc, unsigned, (unsigned* p, unsigned lim),
                     { return qd_emu::atomic_rmw(p, [lim](unsigned o) { return o >= lim ? 0u : o + 1; }); })
QD_EMU_ATOMIC_SCOPES(atomicDec, unsigned, (unsigned* p, unsigned lim),
                     { return qd_emu::atomic_rmw(p, [lim](unsigned o) { return (o == 0 || o > lim) ? lim : o - 1; }); })
#define QD_EMU_ATOMIC_FLOAT(T)                                                                              \
    QD_EMU_ATOMIC_SCOPES(atomicAdd, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T o) { return o + v; }); }) \
    QD_EMU_ATOMIC_SCOPES(atomicSub, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T o) { return o - v; }); }) \
    QD_EMU_ATOMIC_SCOPES(atomicExch, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T) { return v; }); })
QD_EMU_ATOMIC_FLOAT(float)
QD_EMU_ATOMIC_FLOAT(double)
// CUDA 12.8's scoped atomic built-ins. The order and scope are accepted and not needed: one
// OS thread runs a block, so every access is already ordered (race-check builds make all
// atomics seq_cst, see QD_EMU_ATOMIC_ORDER).
#define __NV_ATOMIC_RELAXED __ATOMIC_RELAXED
#define __NV_ATOMIC_CONSUME __ATOMIC_CONSUME
#define __NV_ATOMIC_ACQUIRE __ATOMIC_ACQUIRE
#define __NV_ATOMIC_RELEASE __ATOMIC_RELEASE
#define __NV_ATOMIC_ACQ_REL __ATOMIC_ACQ_REL
#define __NV_ATOMIC_SEQ_CST __ATOMIC_SEQ_CST
#define __NV_THREAD_SCOPE_SYSTEM 0
#define __NV_THREAD_SCOPE_DEVICE 1
#define __NV_THREAD_SCOPE_CLUSTER 2
#define __NV_THREAD_SCOPE_BLOCK 3
#define __NV_THREAD_SCOPE_THREAD 4
template <class T> inline void __nv_atomic_load(const T* p, T* ret, int, int = 0) { __atomic_load(p, ret, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __nv_atomic_load_n(const T* p, int, int = 0) {
    T v;
    __atomic_load(p, &v, QD_EMU_ATOMIC_ORDER);
    return v;
}
template <class T> inline void __nv_atomic_store(T* p, T* v, int, int = 0) { __atomic_store(p, v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline void __nv_atomic_store_n(T* p, T v, int, int = 0) { __atomic_store(p, &v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline void __nv_atomic_exchange(T* p, T* v, T* ret, int, int = 0) { __atomic_exchange(p, v, ret, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __nv_atomic_exchange_n(T* p, T v, int, int = 0) {
    if (qd_emu::prefetch_only(p)) return T{};
    T old;
    __atomic_exchange(p, &v, &old, QD_EMU_ATOMIC_ORDER);
    return old;
}
template <class T> inline bool __nv_atomic_compare_exchange(T* p, T* expected, T* desired, bool, int, int, int = 0) {
    return __atomic_compare_exchange(p, expected, desired, false, QD_EMU_ATOMIC_ORDER, QD_EMU_ATOMIC_ORDER);
}
template <class T> inline bool __nv_atomic_compare_exchange_n(T* p, T* expected, T desired, bool, int, int, int = 0) {
    return __atomic_compare_exchange(p, expected, &desired, false, QD_EMU_ATOMIC_ORDER, QD_EMU_ATOMIC_ORDER);
}
template <class T> inline T __nv_atomic_fetch_add(T* p, T v, int, int = 0) { return qd_emu::atomic_rmw(p, [v](T o) { return (T)(o + v); }); }
template <class T> inline T __nv_atomic_fetch_sub(T* p, T v, int, int = 0) { return qd_emu::atomic_rmw(p, [v](T o) { return (T)(o - v); }); }
template <class T> inline T __nv_atomic_fetch_min(T* p, T v, int, int = 0) { return qd_emu::atomic_rmw(p, [v](T o) { return o < v ? o : v; }); }
template <class T> inline T __nv_atomic_fetch_max(T* p, T v, int, int = 0) { return qd_emu::atomic_rmw(p, [v](T o) { return o > v ? o : v; }); }
template <class T> inline T __nv_atomic_fetch_and(T* p, T v, int, int = 0) { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_and(p, v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __nv_atomic_fetch_or(T* p, T v, int, int = 0) { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_or(p, v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __nv_atomic_fetch_xor(T* p, T v, int, int = 0) { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_xor(p, v, QD_EMU_ATOMIC_ORDER); }
inline void __nv_atomic_thread_fence(int, int = 0) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#ifdef QD_EMU_HIP
// HIP has floating min/max atomics (CUDA does not: its code gets CAS loops instead).
#define QD_EMU_ATOMIC_FMINMAX(T)                                                                            \
    QD_EMU_ATOMIC_SCOPES(atomicMin, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T o) { return fmin(o, v); }); }) \
    QD_EMU_ATOMIC_SCOPES(atomicMax, T, (T* p, T v), { return qd_emu::atomic_rmw(p, [v](T o) { return fmax(o, v); }); })
QD_EMU_ATOMIC_FMINMAX(float)
QD_EMU_ATOMIC_FMINMAX(double)
#undef QD_EMU_ATOMIC_FMINMAX
inline float unsafeAtomicAdd(float* p, float v) { return atomicAdd(p, v); }
inline double unsafeAtomicAdd(double* p, double v) { return atomicAdd(p, v); }
inline float safeAtomicAdd(float* p, float v) { return atomicAdd(p, v); }
inline double safeAtomicAdd(double* p, double v) { return atomicAdd(p, v); }

// clang's scoped atomic builtins, as the HIP target spells them. clang++ has them on any
// target (one OS thread runs a block, so every scope is as good as system scope); g++ gets
// these stand-ins.
#ifndef __HIP_MEMORY_SCOPE_AGENT
#define __HIP_MEMORY_SCOPE_SINGLETHREAD 1
#define __HIP_MEMORY_SCOPE_WAVEFRONT 2
#define __HIP_MEMORY_SCOPE_WORKGROUP 3
#define __HIP_MEMORY_SCOPE_AGENT 4
#define __HIP_MEMORY_SCOPE_SYSTEM 5
#endif
#ifndef __clang__
template <class T> inline T __hip_atomic_fetch_add(T* p, T v, int, int) { return qd_emu::atomic_rmw(p, [v](T o) { return (T)(o + v); }); }
template <class T> inline T __hip_atomic_fetch_min(T* p, T v, int, int) { return qd_emu::atomic_rmw(p, [v](T o) { return o < v ? o : v; }); }
template <class T> inline T __hip_atomic_fetch_max(T* p, T v, int, int) { return qd_emu::atomic_rmw(p, [v](T o) { return o > v ? o : v; }); }
template <class T> inline T __hip_atomic_fetch_and(T* p, T v, int, int) { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_and(p, v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __hip_atomic_fetch_or(T* p, T v, int, int) { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_or(p, v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __hip_atomic_fetch_xor(T* p, T v, int, int) { return qd_emu::prefetch_only(p) ? (T)0 : __atomic_fetch_xor(p, v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline T __hip_atomic_exchange(T* p, T v, int, int) {
    if (qd_emu::prefetch_only(p)) return T{};
    T old;
    __atomic_exchange(p, &v, &old, QD_EMU_ATOMIC_ORDER);
    return old;
}
template <class T> inline T __hip_atomic_load(const T* p, int, int) {
    T v;
    __atomic_load(p, &v, QD_EMU_ATOMIC_ORDER);
    return v;
}
template <class T> inline void __hip_atomic_store(T* p, T v, int, int) { __atomic_store(p, &v, QD_EMU_ATOMIC_ORDER); }
template <class T> inline bool __hip_atomic_compare_exchange_strong(T* p, T* expected, T desired, int, int, int) {
    return __atomic_compare_exchange(p, expected, &desired, false, QD_EMU_ATOMIC_ORDER, QD_EMU_ATOMIC_ORDER);
}
template <class T> inline bool __hip_atomic_compare_exchange_weak(T* p, T* expected, T desired, int, int, int) {
    return __atomic_compare_exchange(p, expected, &desired, false, QD_EMU_ATOMIC_ORDER, QD_EMU_ATOMIC_ORDER);
}
#elif defined(QD_EMU_PLAIN)
// clang's own builtins would bypass the prefetch pass (prefetch_only): the HIP text spells i64
// min/max and its 16-bit compare-and-swap with them, so a plain module routes those through
// it (the wrappers, defined before the names are, call the builtins themselves).
#define QD_EMU_HIP_RMW(name)                                                                     \
    template <class T> inline T qd_emu_##name(T* p, T v, int order, int scope) {                \
        return qd_emu::prefetch_only(p) ? T{} : name(p, v, order, scope);                        \
    }
QD_EMU_HIP_RMW(__hip_atomic_fetch_add)
QD_EMU_HIP_RMW(__hip_atomic_fetch_min)
QD_EMU_HIP_RMW(__hip_atomic_fetch_max)
QD_EMU_HIP_RMW(__hip_atomic_fetch_and)
QD_EMU_HIP_RMW(__hip_atomic_fetch_or)
QD_EMU_HIP_RMW(__hip_atomic_fetch_xor)
QD_EMU_HIP_RMW(__hip_atomic_exchange)
#undef QD_EMU_HIP_RMW
// A compare-and-swap in the prefetch pass succeeds without writing: the loop around it ends.
#define QD_EMU_HIP_CAS(name)                                                                     \
    template <class T> inline bool qd_emu_##name(T* p, T* expected, T desired, int s, int f, int scope) { \
        return qd_emu::prefetch_only(p) || name(p, expected, desired, s, f, scope);              \
    }
QD_EMU_HIP_CAS(__hip_atomic_compare_exchange_strong)
QD_EMU_HIP_CAS(__hip_atomic_compare_exchange_weak)
#undef QD_EMU_HIP_CAS
#define __hip_atomic_fetch_add qd_emu___hip_atomic_fetch_add
#define __hip_atomic_fetch_min qd_emu___hip_atomic_fetch_min
#define __hip_atomic_fetch_max qd_emu___hip_atomic_fetch_max
#define __hip_atomic_fetch_and qd_emu___hip_atomic_fetch_and
#define __hip_atomic_fetch_or qd_emu___hip_atomic_fetch_or
#define __hip_atomic_fetch_xor qd_emu___hip_atomic_fetch_xor
#define __hip_atomic_exchange qd_emu___hip_atomic_exchange
#define __hip_atomic_compare_exchange_strong qd_emu___hip_atomic_compare_exchange_strong
#define __hip_atomic_compare_exchange_weak qd_emu___hip_atomic_compare_exchange_weak
#endif  // __clang__
#define __builtin_amdgcn_fence(order, scope) __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
#undef QD_EMU_ATOMIC_INT
#undef QD_EMU_ATOMIC_FLOAT

// ----------------------------------------------------------------------------- warp collectives

namespace qd_emu {

#if QD_EMU_WARP_SIZE == 64 || defined(QD_EMU_HIP)
typedef unsigned long long lanemask_t;   // HIP's ballot / activemask are 64-bit at any wave size
#else
typedef unsigned lanemask_t;
#endif

template <class T>
inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp operand must fit in 64 bits");
    unsigned long long b = 0;
    __builtin_memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
    T v;
    __builtin_memcpy(&v, &b, sizeof(T));
    return v;
}

enum ShflKind { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR };

#ifdef QD_EMU_PLAIN
// A plain module's reduction runs its task once per OS thread's share (QD_EMU_PLAIN_SHARE):
// one thread, lane 0 of its warp and thread 0 of its block, alone. Barriers have no one to
// wait for, a collective's members are that lane, and a shuffle from a lane that is not
// there reads the identity of the reduction the task's epilogue folds (`plain_op`, set by the
// runner: the epilogue folds one operation, see _plain), so the block fold of one partial is
// that partial, and the epilogue's one atomic per block is one per share.
enum PlainOp { PLAIN_ADD, PLAIN_MIN, PLAIN_MAX, PLAIN_AND, PLAIN_OR, PLAIN_XOR };
// plain_count: the elements the task loop runs (one outside a reduction's share).
static __thread int plain_count, plain_op;
template <class T>
inline T plain_identity() {
    if constexpr (std::is_arithmetic_v<T>) {
        using L = std::numeric_limits<T>;
        if (plain_op == PLAIN_MIN) return L::has_infinity ? L::infinity() : L::max();
        if (plain_op == PLAIN_MAX) return L::has_infinity ? -L::infinity() : L::lowest();
        if (plain_op == PLAIN_AND) return std::is_integral_v<T> ? (T)~0ull : T{};
    }
    return T{};
}
inline unsigned long long plain_lone(unsigned long long value, long long arg, int width, qd_emu_compute_fn fn) {
    qd_emu_lanes L;
    L.members = 1;
    L.width = width;
    L.warp_size = QD_EMU_WARP_SIZE;
    L.value[0] = L.result[0] = value;
    L.arg[0] = arg;
    fn(&L);
    return L.result[0];
}
#define qd_emu_warp_op(line, what, mask, converge, value, arg, width, ...) \
    ::qd_emu::plain_lone((value), (arg), (width), (__VA_ARGS__))
#endif

// Source lane for each shuffle kind, as PTX `shfl.sync` defines it (and HIP's __shfl_* do):
// outside the caller's `width`-wide segment, a lane keeps its own value.
template <int K>
inline void shfl_compute(qd_emu_lanes* L) {
    int w = L->width;
    for (int lane = 0; lane < L->warp_size; ++lane) {
        if (!((L->members >> lane) & 1)) continue;
        int seg = lane & ~(w - 1), src;
        long long a = L->arg[lane];
        if (K == SHFL_IDX) src = seg + (int)(a & (w - 1));
        else if (K == SHFL_UP) src = (lane - seg) >= a ? lane - (int)a : lane;
        else if (K == SHFL_DOWN) src = (lane - seg) + a < w ? lane + (int)a : lane;
        else { src = lane ^ (int)a; if (src >= seg + w || src >= L->warp_size) src = lane; }
        // Reading a lane that is not taking part is undefined on the GPU: keep our own value.
        L->result[lane] = ((L->members >> src) & 1) ? L->value[src] : L->value[lane];
    }
}
template <int K, class T>
inline T shfl(int line, const char* what, unsigned long long mask, int converge, T var, long long arg,
              int width = QD_EMU_WARP_SIZE) {
    if (width <= 0 || width > QD_EMU_WARP_SIZE || (width & (width - 1))) width = QD_EMU_WARP_SIZE;
#ifdef QD_EMU_PLAIN
    // Lane 0 alone (see plain_lone): its own value where PTX reads lane 0 or keeps its own,
    // the reduction's identity where it reads a lane that is not there.
    long long src = K == SHFL_IDX ? (arg & (width - 1)) : K == SHFL_UP || arg >= width ? 0 : arg;
    return src == 0 ? var : plain_identity<T>();
#endif
    return from_bits<T>(qd_emu_warp_op(line, what, mask, converge, to_bits(var), arg, width, &shfl_compute<K>));
}

inline void ballot_compute(qd_emu_lanes* L) {
    unsigned long long b = 0;
    for (int lane = 0; lane < L->warp_size; ++lane)
        if (((L->members >> lane) & 1) && L->value[lane]) b |= 1ull << lane;
    for (int lane = 0; lane < L->warp_size; ++lane) L->result[lane] = b;
}
inline unsigned long long ballot(int line, const char* what, unsigned long long mask, int converge, bool pred) {
    return qd_emu_warp_op(line, what, mask, converge, pred ? 1 : 0, 0, QD_EMU_WARP_SIZE, &ballot_compute);
}
inline void nop_compute(qd_emu_lanes*) {}
inline void members_compute(qd_emu_lanes* L) {
    for (int lane = 0; lane < L->warp_size; ++lane) L->result[lane] = L->members;
}

template <class T, int OP>  // 0 add, 1 min, 2 max
inline void reduce_compute(qd_emu_lanes* L) {
    T acc{};
    bool first = true;
    for (int lane = 0; lane < L->warp_size; ++lane) {
        if (!((L->members >> lane) & 1)) continue;
        T v = from_bits<T>(L->value[lane]);
        if (first) acc = v, first = false;
        else if (OP == 0) acc = (T)(acc + v);
        else if (OP == 1) acc = v < acc ? v : acc;
        else acc = v > acc ? v : acc;
    }
    for (int lane = 0; lane < L->warp_size; ++lane) L->result[lane] = to_bits(acc);
}
template <int OP, class T>
inline T reduce(int line, const char* what, unsigned long long mask, T v) {
    return from_bits<T>(qd_emu_warp_op(line, what, mask, 0, to_bits(v), 0, QD_EMU_WARP_SIZE, &reduce_compute<T, OP>));
}

inline void match_any_compute(qd_emu_lanes* L) {
    for (int lane = 0; lane < L->warp_size; ++lane) {
        if (!((L->members >> lane) & 1)) continue;
        unsigned long long m = 0;
        for (int o = 0; o < L->warp_size; ++o)
            if (((L->members >> o) & 1) && L->value[o] == L->value[lane]) m |= 1ull << o;
        L->result[lane] = m;
    }
}
inline void match_all_compute(qd_emu_lanes* L) {
    bool same = true;
    int first = std::countr_zero(L->members);
    for (int lane = 0; lane < L->warp_size; ++lane)
        if (((L->members >> lane) & 1) && L->value[lane] != L->value[first]) same = false;
    for (int lane = 0; lane < L->warp_size; ++lane) L->result[lane] = same ? L->members : 0;
}

}  // namespace qd_emu

template <class T>
inline unsigned long long qd_emu_match_bits(T v) { return qd_emu::to_bits(v); }

// Lockstep atomics. A GPU's converged warp executes an atomic as one instruction: every
// lane has evaluated its operands before any lane's update, and every lane sees the updates
// done when it goes on (an operand read from the memory the warp updates is the value from
// before all of them). Fibers would otherwise interleave at any point, so each atomic is a
// collective of the lanes that reach it together (converge, as HIP's mask-free votes), whose
// updates run in lane order once they all have. QD_EMU_NO_LOCKSTEP (and the race check,
// which must see every interleaving) keeps the per-thread form. Compare-and-swap stays
// per thread: its loops retry, whatever the order.
#if !defined(QD_EMU_TSAN) && !defined(QD_EMU_NO_LOCKSTEP) && !defined(QD_EMU_PLAIN)
namespace qd_emu {
enum LockstepOp { LS_ADD, LS_SUB, LS_AND, LS_OR, LS_XOR, LS_EXCH, LS_MIN, LS_MAX };
template <class T, int OP>
inline T apply_atomic(T* p, T v) {
    if constexpr (OP == LS_ADD) return (atomicAdd)(p, v);
    else if constexpr (OP == LS_SUB) return (atomicSub)(p, v);
    else if constexpr (OP == LS_AND) return (atomicAnd)(p, v);
    else if constexpr (OP == LS_OR) return (atomicOr)(p, v);
    else if constexpr (OP == LS_XOR) return (atomicXor)(p, v);
    else if constexpr (OP == LS_EXCH) return (atomicExch)(p, v);
    else if constexpr (OP == LS_MIN) return (atomicMin)(p, v);
    else return (atomicMax)(p, v);
}
template <class T, int OP>
void lockstep_compute(qd_emu_lanes* L) {
    for (int lane = 0; lane < L->warp_size; ++lane) {
        if (!((L->members >> lane) & 1)) continue;
        T* p = reinterpret_cast<T*>(L->arg[lane]);
        L->result[lane] = to_bits(apply_atomic<T, OP>(p, from_bits<T>(L->value[lane])));
    }
}
template <int OP, class T, class V>
inline T lockstep(int line, const char* what, T* p, V v) {
    return from_bits<T>(qd_emu_warp_op(line, what, 0, 2, to_bits(static_cast<T>(v)), reinterpret_cast<long long>(p),
                                       QD_EMU_WARP_SIZE, &lockstep_compute<T, OP>));
}
}  // namespace qd_emu
#define QD_EMU_LOCKSTEP(NAME, OP, p, v) ::qd_emu::lockstep<::qd_emu::OP>(__LINE__, #NAME, (p), (v))
#define atomicAdd(p, v) QD_EMU_LOCKSTEP(atomicAdd, LS_ADD, p, v)
#define atomicSub(p, v) QD_EMU_LOCKSTEP(atomicSub, LS_SUB, p, v)
#define atomicAnd(p, v) QD_EMU_LOCKSTEP(atomicAnd, LS_AND, p, v)
#define atomicOr(p, v) QD_EMU_LOCKSTEP(atomicOr, LS_OR, p, v)
#define atomicXor(p, v) QD_EMU_LOCKSTEP(atomicXor, LS_XOR, p, v)
#define atomicExch(p, v) QD_EMU_LOCKSTEP(atomicExch, LS_EXCH, p, v)
#define atomicMin(p, v) QD_EMU_LOCKSTEP(atomicMin, LS_MIN, p, v)
#define atomicMax(p, v) QD_EMU_LOCKSTEP(atomicMax, LS_MAX, p, v)
#endif

#define __shfl_sync(mask, var, ...) ::qd_emu::shfl<::qd_emu::SHFL_IDX>(__LINE__, "__shfl_sync", (mask), 0, (var), __VA_ARGS__)
#define __shfl_up_sync(mask, var, ...) ::qd_emu::shfl<::qd_emu::SHFL_UP>(__LINE__, "__shfl_up_sync", (mask), 0, (var), __VA_ARGS__)
#define __shfl_down_sync(mask, var, ...) ::qd_emu::shfl<::qd_emu::SHFL_DOWN>(__LINE__, "__shfl_down_sync", (mask), 0, (var), __VA_ARGS__)
#define __shfl_xor_sync(mask, var, ...) ::qd_emu::shfl<::qd_emu::SHFL_XOR>(__LINE__, "__shfl_xor_sync", (mask), 0, (var), __VA_ARGS__)
#define __ballot_sync(mask, pred) ((::qd_emu::lanemask_t)::qd_emu::ballot(__LINE__, "__ballot_sync", (mask), 0, (pred)))
#define __any_sync(mask, pred) ((int)(::qd_emu::ballot(__LINE__, "__any_sync", (mask), 0, (pred)) != 0))
#define __all_sync(mask, pred) ((int)(::qd_emu::ballot(__LINE__, "__all_sync", (mask), 0, !(pred)) == 0))
// vote.uni: the predicate is the same on every lane of the mask (one ballot: none or all set).
#define __uni_sync(mask, pred) ::qd_emu::uni(__LINE__, (mask), (pred))
#define __reduce_add_sync(mask, v) ::qd_emu::reduce<0>(__LINE__, "__reduce_add_sync", (mask), (v))
#define __reduce_min_sync(mask, v) ::qd_emu::reduce<1>(__LINE__, "__reduce_min_sync", (mask), (v))
#define __reduce_max_sync(mask, v) ::qd_emu::reduce<2>(__LINE__, "__reduce_max_sync", (mask), (v))
#define __match_any_sync(mask, v) ((::qd_emu::lanemask_t)qd_emu_warp_op(__LINE__, "__match_any_sync", (mask), 0, qd_emu_match_bits(v), 0, QD_EMU_WARP_SIZE, &::qd_emu::match_any_compute))
#define __match_all_sync(mask, v, pred) ::qd_emu::match_all(__LINE__, (mask), qd_emu_match_bits(v), (pred))
#define __syncwarp(...) ::qd_emu::syncwarp(__LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __activemask() ((::qd_emu::lanemask_t)qd_emu_warp_op(__LINE__, "__activemask()", 0, 1, 0, 0, QD_EMU_WARP_SIZE, &::qd_emu::members_compute))

namespace qd_emu {
inline int uni(int line, unsigned long long mask, bool pred) {
    unsigned long long votes = ballot(line, "__uni_sync", mask, 0, pred);
    unsigned long long lanes = ballot(line, "__uni_sync", mask, 0, true);  // the mask's lanes that exist
    return votes == 0 || votes == lanes;
}
inline void syncwarp(int line, unsigned long long mask = ~0ull) {
    qd_emu_warp_op(line, "__syncwarp", mask, 0, 0, 0, QD_EMU_WARP_SIZE, &nop_compute);
}
inline lanemask_t match_all(int line, unsigned long long mask, unsigned long long bits, int* pred) {
    unsigned long long r = qd_emu_warp_op(line, "__match_all_sync", mask, 0, bits, 0, QD_EMU_WARP_SIZE, &match_all_compute);
    *pred = r != 0;
    return (lanemask_t)r;
}
}  // namespace qd_emu

#ifdef QD_EMU_HIP
// HIP's mask-free spellings act on the active lanes: those that arrive together.
#define __shfl(var, ...) ::qd_emu::shfl<::qd_emu::SHFL_IDX>(__LINE__, "__shfl", ~0ull, 1, (var), __VA_ARGS__)
#define __shfl_up(var, ...) ::qd_emu::shfl<::qd_emu::SHFL_UP>(__LINE__, "__shfl_up", ~0ull, 1, (var), __VA_ARGS__)
#define __shfl_down(var, ...) ::qd_emu::shfl<::qd_emu::SHFL_DOWN>(__LINE__, "__shfl_down", ~0ull, 1, (var), __VA_ARGS__)
#define __shfl_xor(var, ...) ::qd_emu::shfl<::qd_emu::SHFL_XOR>(__LINE__, "__shfl_xor", ~0ull, 1, (var), __VA_ARGS__)
#define __ballot(pred) ((unsigned long long)::qd_emu::ballot(__LINE__, "__ballot", ~0ull, 1, (pred)))
#define __any(pred) ((int)(::qd_emu::ballot(__LINE__, "__any", ~0ull, 1, (pred)) != 0))
#define __all(pred) ((int)(::qd_emu::ballot(__LINE__, "__all", ~0ull, 1, !(pred)) == 0))
#define __lane_id() ((unsigned)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % QD_EMU_WARP_SIZE))
#define __builtin_amdgcn_s_barrier() ((void)qd_emu_block_barrier(__LINE__, "__builtin_amdgcn_s_barrier", 1))
#define __builtin_amdgcn_wave_barrier() ((void)qd_emu_warp_op(__LINE__, "__builtin_amdgcn_wave_barrier", ~0ull, 1, 0, 0, QD_EMU_WARP_SIZE, &::qd_emu::nop_compute))
#endif

// ----------------------------------------------------------------------------- block barriers

#ifdef QD_EMU_PLAIN  // one thread alone (see plain_lone)
#define __syncthreads() ((void)0)
#define __syncthreads_count(p) ((p) ? 1 : 0)
#define __syncthreads_and(p) ((int)((p) ? 1 : 0))
#define __syncthreads_or(p) ((int)((p) ? 1 : 0))
#undef __builtin_amdgcn_s_barrier
#define __builtin_amdgcn_s_barrier() ((void)0)
#else
#define __syncthreads() ((void)qd_emu_block_barrier(__LINE__, "__syncthreads()", 1))
#define __syncthreads_count(p) qd_emu_block_barrier(__LINE__, "__syncthreads_count()", (p) ? 1 : 0)
#define __syncthreads_and(p) ((int)(qd_emu_block_barrier(__LINE__, "__syncthreads_and()", (p) ? 1 : 0) == (int)(blockDim.x * blockDim.y * blockDim.z)))
#define __syncthreads_or(p) ((int)(qd_emu_block_barrier(__LINE__, "__syncthreads_or()", (p) ? 1 : 0) != 0))
#endif
#define __nanosleep(ns) qd_emu_yield(__LINE__)
#define __trap() qd_emu_trap(__LINE__, "__trap()")
#define __brkpt() qd_emu_trap(__LINE__, "__brkpt()")

// ----------------------------------------------------------------------------- the launcher

// Linker-made bounds of the section every `__shared__` variable lands in (poisoned per block).
extern "C" char __start_qd_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_qd_shared[] __attribute__((weak, visibility("hidden")));

namespace qd_emu {
template <class... Ts, std::size_t... I>
inline std::tuple<Ts...> unpack(void** args, std::index_sequence<I...>) {
    return std::tuple<Ts...>(*static_cast<Ts*>(args[I])...);
}
// A direct launch's block: the kernel is a constant here, so the compiler inlines its body
// into the loop over the threads. saxpy and particles on 1M elements, one OS thread, best ms
// per call here: 2.9 and 9.5 as fibers (16 elements a thread, a grid stride apart), 1.8 and
// 4.5 called directly (one element a thread, the threads in order).
template <auto K, class... Ts, std::size_t... I>
__attribute__((flatten)) void run_threads(const std::tuple<Ts...>& a, std::index_sequence<I...>) {
    const qd_emu_uint3 dim = blockDim;
    for (unsigned z = 0; z < dim.z; ++z) {
        threadIdx.z = z;
        for (unsigned y = 0; y < dim.y; ++y) {
            threadIdx.y = y;
            for (unsigned x = 0; x < dim.x; ++x) {
                threadIdx.x = x;
                K(std::get<I>(a)...);  // a direct call of a constant: inlined (flatten)
            }
        }
    }
}
template <auto K, class... Ts>
void run_direct(void* args) {
    run_threads<K>(*static_cast<std::tuple<Ts...>*>(args), std::index_sequence_for<Ts...>{});
}
// A kernel of many parameters (Quadrants takes 512 ndarrays) reads each from where args
// points, every call: libstdc++'s std::tuple nests one level per element, past the compiler's
// template depth (1024) there.
template <auto K, class... Ts, std::size_t... I>
inline void call_from(void** args, std::index_sequence<I...>) {
    K(*static_cast<Ts*>(args[I])...);
}
template <auto K, class... Ts>
void run_direct_from(void* args) {
    const qd_emu_uint3 dim = blockDim;
    for (unsigned z = 0; z < dim.z; ++z) {
        threadIdx.z = z;
        for (unsigned y = 0; y < dim.y; ++y) {
            threadIdx.y = y;
            for (unsigned x = 0; x < dim.x; ++x) {
                threadIdx.x = x;
                call_from<K, Ts...>(static_cast<void**>(args), std::index_sequence_for<Ts...>{});
            }
        }
    }
}
constexpr std::size_t kTupleMax = 256;
#ifdef QD_EMU_PLAIN
// A plain module (QD_EMU_PLAIN: every task a loop whose iterations never meet, see
// CpuBackend.load) reads the task loop's index from these instead of the hardware indices:
// the element in plain_thread.x, blockIdx.x and gridDim.x as 0. They are internal to this
// TU and their address never escapes, so the compiler knows no store of the kernel's
// touches them: the runner's per-element store stays in a register, and the loop over a
// block's elements, with the kernel's body inlined into it, vectorizes.
// Signed: the task loop's `(int32_t)(blockIdx.x * 128u + threadIdx.x)` is then int arithmetic
// that cannot wrap, so the compiler sees `x[i * 3 + 1]` as a fixed offset from `x[i * 3]` (in
// unsigned arithmetic it checked at run time whether the two overlap, and they always did:
// particles on vec3 arrays ran scalar).
struct plain_index {
    int v;
    explicit operator int() const { return v; }  // a reduction epilogue's `(int32_t)threadIdx.x`
};
inline plain_index operator*(plain_index a, unsigned b) { return {a.v * (int)b}; }
inline int operator*(unsigned a, plain_index b) { return (int)a * b.v; }
inline int operator+(plain_index a, plain_index b) { return a.v + b.v; }
struct plain_dim { plain_index x; };
// The arguments of a plain launch, one member each: what std::tuple holds, without its
// instantiations (std::tuple's constraints were half of a small kernel's build at -O0).
template <std::size_t I, class T> struct plain_slot { T v; };
template <class S, class... Ts> struct plain_args;
template <std::size_t... I, class... Ts>
struct plain_args<std::index_sequence<I...>, Ts...> : plain_slot<I, Ts>... {};
template <std::size_t I, class T> inline T plain_get(const plain_slot<I, T>& s) { return s.v; }
static __thread plain_dim plain_thread, plain_zero;
// threadIdx in the task loop (see `for`: qd_emu_task is then the loop's int) is the element,
// or a share's first; anywhere else (a reduction's epilogue) the lone thread 0.
struct plain_outside {
    plain_outside& operator=(bool) { return *this; }
};
inline const plain_dim& thread_at(int) { return plain_thread; }
inline const plain_dim& thread_at(plain_outside&) { return plain_zero; }
// gridDim.x, the grid stride's factor: the task loop steps one element (through a share).
struct plain_step {};
inline int operator*(unsigned, plain_step) { return 1; }
inline int operator*(plain_step, unsigned) { return 1; }
struct plain_grid { plain_step x; };
inline constexpr plain_grid plain_grid_dim{};
// A block's elements: `exact` also sets the hardware threadIdx for each (not vectorized), so
// that a fault names its thread; the runtime reruns a failed block so (QD_EMU_PLAIN).
// The running element as the hardware indices (for the watchdog and its message).
inline void plain_here() { threadIdx.x = (unsigned)plain_thread.x.v - blockIdx.x * blockDim.x; }
// The thread a fault will name: stored before the element runs, in order (the kernel never
// reads threadIdx here, so a plain store would be kept in a register until the loop ends).
inline void set_thread(unsigned x) {
    *(volatile unsigned*)&threadIdx.x = x;
    __asm__ __volatile__("" ::: "memory");
}
// First in each runner: this module's thread-locals, reached through glibc's __tls_get_addr,
// whose slow path (a thread's first use of a newly loaded module, or the first after another
// was loaded) calls malloc and memcpy, which use xmm16-31 (their EVEX forms), and clang 19
// assumes the call keeps those: a scalar argument held there came back as garbage (a kernel's
// f32 argument read as 4.2e-44 on its first call, glibc 2.36). Taken here, before anything is
// loaded (the memory clobber keeps the argument loads after it), that call is the function's
// only one (clang computes a local-dynamic base once per function). Their values, not their
// addresses, which must not escape (see plain_index).
inline void plain_tls_first() {
    __asm__ __volatile__("" : : "r"(plain_thread.x.v), "r"(plain_count), "r"(plain_op), "r"(plain_prefetch)
                         : "memory");
}
// A prefetch pass's elements (see prefetch_only): 1M random f32 `+=`, 2 threads here, median
// ms per call over three runs on a busy machine: no pass 4.7-4.8, chunks of 32 elements
// 4.7-8.9, 64 4.1-4.4, 128 4.1-4.4 (a block's 128); prefetching 16, 32 or 64 elements ahead
// of each one instead, within the block, measured no better than chunks of 64.
#ifndef QD_EMU_PREFETCH_CHUNK
#define QD_EMU_PREFETCH_CHUNK 64
#endif
// `prefetch`: each chunk of the block's elements runs twice, as a prefetch pass and then for
// real (QD_EMU_PREFETCH_ENTRY); every other runner stores false first, so the compiler
// folds the atomics' check away there.
template <auto K, bool exact, bool prefetch, class... Ts, std::size_t... I>
__attribute__((flatten)) void run_plain(void* args, std::index_sequence<I...>) {
    plain_tls_first();
    plain_prefetch = false;
    // Signed, as plain_index: first + x cannot wrap (a grid holds fewer than 2^31 threads).
    const int n = (int)blockDim.x, first = (int)(blockIdx.x * blockDim.x);
    if constexpr (sizeof...(Ts) > kTupleMax) {  // see call_from
        plain_count = 1;  // one element a call (see `for`)
        for (int x = 0; x < n; ++x) {
            if constexpr (exact) set_thread(x);
            plain_thread.x.v = first + x;
            K(*static_cast<Ts*>(static_cast<void**>(args)[I])...);
        }
    } else {
        // A copy whose address never escapes: the arguments stay in registers, where the
        // kernel's stores (which may alias any memory) cannot change them.
        const plain_args<std::index_sequence<I...>, Ts...> a{{*static_cast<Ts*>(static_cast<void**>(args)[I])}...};
        plain_count = 1;  // one element a call (see `for`)
        if constexpr (prefetch && !exact) {
            for (int lo = 0; lo < n; lo += QD_EMU_PREFETCH_CHUNK) {
                const int hi = lo + QD_EMU_PREFETCH_CHUNK < n ? lo + QD_EMU_PREFETCH_CHUNK : n;
                for (int pass = 1; pass >= 0; --pass) {
                    plain_prefetch = pass;
                    for (int x = lo; x < hi; ++x) {
                        plain_thread.x.v = first + x;
                        K(plain_get<I>(a)...);
                    }
                }
            }
            plain_prefetch = false;
        } else {
            for (int x = 0; x < n; ++x) {
                if constexpr (exact) set_thread(x);
                plain_thread.x.v = first + x;
                K(plain_get<I>(a)...);  // the task loop runs once: see `for`
            }
        }
    }
}
template <auto K, bool exact, bool prefetch, class... Ts>
void run_plain_block(void* args) {
    run_plain<K, exact, prefetch, Ts...>(args, std::index_sequence_for<Ts...>{});
}
// A reduction's share (QD_EMU_PLAIN_SHARE): one call whose task loop runs every element of the
// share's blocks, in order, into one partial; its epilogue then folds that alone (plain_lone).
template <auto K, int OP, class... Ts, std::size_t... I>
__attribute__((flatten)) void run_share(void* args, std::index_sequence<I...>) {
    plain_tls_first();
    plain_prefetch = false;
    plain_op = OP;
    plain_count = (int)(qd_emu_share_blocks * blockDim.x);
    plain_thread.x.v = (int)(blockIdx.x * blockDim.x);
    if constexpr (sizeof...(Ts) > kTupleMax) {  // see call_from
        K(*static_cast<Ts*>(static_cast<void**>(args)[I])...);
    } else {
        const plain_args<std::index_sequence<I...>, Ts...> a{{*static_cast<Ts*>(static_cast<void**>(args)[I])}...};
        K(plain_get<I>(a)...);  // see run_plain
    }
}
template <auto K, int OP, class... Ts>
void run_share_block(void* args) {
    run_share<K, OP, Ts...>(args, std::index_sequence_for<Ts...>{});
}
#endif
// args[i] points at the i-th parameter's value (cuLaunchKernel's convention). OP >= 0: a plain
// module's reduction, whose epilogue folds that PlainOp (QD_EMU_SHARE_ENTRY); `prefetch`: a
// plain task run with prefetch passes (QD_EMU_PREFETCH_ENTRY, see run_plain).
template <auto K, int OP = -1, bool prefetch = false, class... Ts>
inline int launch(void (*)(Ts...), void** args, const long long* cfg, char* err, int errlen) {
    qd_emu_config c;
    for (int i = 0; i < 3; ++i) c.grid[i] = cfg[i], c.block[i] = cfg[3 + i];
    c.watchdog_ms = cfg[6];
    c.flags = cfg[7];
    c.first_block = cfg[8];
    c.last_block = cfg[9];
    c.workers = cfg[10];
#ifdef QD_EMU_PLAIN
    c.flags |= QD_EMU_DIRECT | QD_EMU_PLAIN_RERUN | (OP >= 0 ? QD_EMU_PLAIN_SHARE : 0);
    qd_emu_block_fn fast;
    if constexpr (OP >= 0) fast = &run_share_block<K, OP, Ts...>;
    else fast = &run_plain_block<K, false, prefetch, Ts...>;
    return qd_emu_run(&run_plain_block<K, true, false, Ts...>, fast, args, &c, QD_EMU_WARP_SIZE, nullptr, nullptr, err, errlen);
#else  // not instantiated in a plain module: a third of its build, for code it never runs
    static_assert(OP < 0 && !prefetch, "a reduction's share and a prefetch pass run in a plain module only");
    if constexpr (sizeof...(Ts) > kTupleMax) {
        return qd_emu_run([](void* p) { call_from<K, Ts...>(static_cast<void**>(p), std::index_sequence_for<Ts...>{}); },
                          &run_direct_from<K, Ts...>, args, &c, QD_EMU_WARP_SIZE, __start_qd_shared,
                          __stop_qd_shared, err, errlen);
    } else {
        std::tuple<Ts...> values = unpack<Ts...>(args, std::index_sequence_for<Ts...>{});
        return qd_emu_run([](void* p) { std::apply(K, *static_cast<std::tuple<Ts...>*>(p)); },
                          &run_direct<K, Ts...>, &values, &c, QD_EMU_WARP_SIZE, __start_qd_shared,
                          __stop_qd_shared, err, errlen);
    }
#endif
}
}  // namespace qd_emu

#define QD_EMU_ENTRY(name)                                                                       \
    extern "C" __attribute__((visibility("default"))) int qd_launch_##name(                      \
        void** args, const long long* cfg, char* err, int errlen) {                              \
        return ::qd_emu::launch<name>(name, args, cfg, err, errlen);                             \
    }
// A plain module's reduction task, whose epilogue folds the PlainOp `op` (see run_share).
#define QD_EMU_SHARE_ENTRY(name, op)                                                             \
    extern "C" __attribute__((visibility("default"))) int qd_launch_##name(                      \
        void** args, const long long* cfg, char* err, int errlen) {                              \
        return ::qd_emu::launch<name, op>(name, args, cfg, err, errlen);                         \
    }
// A plain task whose atomics run after a prefetch pass (see run_plain).
#define QD_EMU_PREFETCH_ENTRY(name)                                                              \
    extern "C" __attribute__((visibility("default"))) int qd_launch_##name(                      \
        void** args, const long long* cfg, char* err, int errlen) {                              \
        return ::qd_emu::launch<name, -1, true>(name, args, cfg, err, errlen);                   \
    }

// ----------------------------------------------------------------------------- spellings
// Everything below rewrites the generated text; nothing after this point may use loops.

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __constant__
// One OS thread runs one block at a time, so a function-local static is per block.
// `used`: the scheduler writes these behind the compiler's back (poison, fresh pages), so a
// shared array the kernel only reads must not be folded to its zero initializer.
#if defined(QD_EMU_PLAIN)  // a reduction's epilogue: each OS thread its own lone block's (run_share)
#define __shared__ static __thread __attribute__((aligned(16)))
#elif defined(QD_EMU_TSAN)  // whole pages, which the scheduler can swap for fresh ones per block
#define __shared__ static __attribute__((section("qd_shared"), aligned(4096), used))
#else
#define __shared__ static __attribute__((section("qd_shared"), aligned(16), used))
#endif

#define int8_t qd_emu_int8_t
#define int16_t qd_emu_int16_t
#define int32_t qd_emu_int32_t
#define int64_t qd_emu_int64_t
#define uint8_t qd_emu_uint8_t
#define uint16_t qd_emu_uint16_t
#define uint32_t qd_emu_uint32_t
#define uint64_t qd_emu_uint64_t

#ifdef QD_EMU_HIP
#define __HIPCC_RTC__ 1
#endif

// Every loop ticks: every few thousand iterations the fiber yields (so a thread spinning on
// another thread of its block lets it run) and checks the watchdog (so a spin on something
// that never happens is reported with this line instead of hanging).
#define QD_EMU_TICK_MASK 0x3fffu
#ifdef QD_EMU_TSAN  // every fiber bumps the counter: an atomic, so TSan does not call it a race
#define qd_emu_tick(line) (__builtin_expect((__atomic_add_fetch(&qd_emu_ticks, 1, __ATOMIC_RELAXED) & QD_EMU_TICK_MASK) == 0, 0) ? (qd_emu_tick_slow(line), true) : true)
#else
// The OS thread's counter (its fibers share it): a thread-pointer offset read once per
// function, then one increment per iteration, as a module-local counter's (saxpy 1M: a
// global's GOT load per iteration took 1.7 ms, this 1.2).
#define qd_emu_tick(line) (__builtin_expect((++qd_emu_ticks & QD_EMU_TICK_MASK) == 0, 0) ? (qd_emu_tick_slow(line), true) : true)
#endif
#ifdef QD_EMU_PLAIN
// A plain module's task loop runs once per call (the runner calls it per element, which the
// launch covers: CpuBackend.run), or over a reduction's share (run_share): plain_count
// elements, a grid stride of one apart. Its start, the only use of threadIdx in a plain
// task's loop, marks the loop as the task's (no tick: the runner's loop over elements, which
// this loop becomes, vectorizes), and its grid stride, the only use of gridDim, counts down
// to the break at the top of the next iteration (a break before the body, rather than after
// the stride, stops clang vectorizing a share's sum: its partial leaves the loop from two
// places). The compiler sees both, and plain_count is the 1 the runner just stored: the loop
// is an `if`. Other loops tick, for the watchdog; the rare slow tick first tells the runtime
// which element runs (its message names the thread). QD_EMU_LOOP_HINT: what a module with
// reductions puts before each loop (see build_module).
static ::qd_emu::plain_outside qd_emu_task;  // outside any loop: a reduction's epilogue
static int qd_emu_gs, qd_emu_n;  // (gridDim outside any loop: read by nobody)
#ifndef QD_EMU_LOOP_HINT
#define QD_EMU_LOOP_HINT
#endif
#undef qd_emu_tick
#define qd_emu_tick(line) (__builtin_expect((++qd_emu_ticks & QD_EMU_TICK_MASK) == 0, 0) \
    ? (::qd_emu::plain_here(), qd_emu_tick_slow(line), true) : true)
#define for(...) for (int qd_emu_task = 0, qd_emu_gs = 0, qd_emu_once = 1, qd_emu_n = ::qd_emu::plain_count; \
                      qd_emu_once; qd_emu_once = 0) \
    QD_EMU_LOOP_HINT for (__VA_ARGS__) if (qd_emu_gs) break; \
    else if (!qd_emu_task && !qd_emu_tick(__LINE__)) {} else
#define threadIdx (::qd_emu::thread_at(qd_emu_task = true))
#define blockIdx ::qd_emu::plain_zero
#define gridDim (qd_emu_gs = --qd_emu_n <= 0, ::qd_emu::plain_grid_dim)
#else
#define for(...) for (__VA_ARGS__) if (!qd_emu_tick(__LINE__)) {} else
#endif
#define while(...) while (qd_emu_tick(__LINE__) && (__VA_ARGS__))

#endif  // QD_EMU_BUILDING_RUNTIME
#endif  // QD_SIMT_H
