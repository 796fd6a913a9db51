// qd_simt_rt.cpp: the scheduler behind qd_simt.h. Built once into a shared library that
// every emulated kernel links to.
//
// Each GPU thread of the running block is a fiber; all fibers of a launch share one OS
// thread, and blocks run one after another in linear index order. (A grid-free task, whose
// blocks cannot see each other, may split its blocks among several OS threads, each with a
// scheduler of its own: see qd_emu_run.) A fiber gives up the CPU
// only at a block barrier, a warp collective, __nanosleep, or a loop back-edge every few
// thousand iterations (qd_simt.h's `for`/`while` hook). So:
//   - a barrier that some thread never reaches shows up as "nothing left to run" and is
//     reported at once, with the barrier's generated line (@L<n>@ in the message; Python
//     maps it to the Python line through the `// file.py:LINE` comment on that line);
//   - a spin that never ends is caught by a watchdog polled from the loop hook: no barrier
//     completed, no thread finished and no block started for `watchdog_ms`.
// A thread that finishes hands its stack straight to the next thread that has not started,
// so a block without barriers runs on one stack with no scheduler round trips. A direct
// launch (QD_EMU_DIRECT) has no fibers at all: the kernel TU's run_direct calls each thread
// of a block in turn on this OS thread's stack; an abort (trap, watchdog) jumps back to
// run_share as a signal does.
#define QD_EMU_BUILDING_RUNTIME 1
#include "qd_simt.h"

#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#define QD_EXPORT extern "C" __attribute__((visibility("default")))

#define QD_EXPORT_VAR __attribute__((visibility("default")))  // declared extern "C" in qd_simt.h

// Per OS thread (the workers of a parallel launch, see qd_emu_run), initial-exec: a kernel
// reads them at an offset from the thread pointer, as cheaply as a global.
QD_EXPORT_VAR QD_EMU_TLS qd_emu_uint3 threadIdx = {0, 0, 0};
QD_EXPORT_VAR QD_EMU_TLS qd_emu_uint3 blockIdx = {0, 0, 0};
QD_EXPORT_VAR QD_EMU_TLS qd_emu_uint3 blockDim = {1, 1, 1};
QD_EXPORT_VAR QD_EMU_TLS qd_emu_uint3 gridDim = {1, 1, 1};
QD_EXPORT_VAR QD_EMU_TLS unsigned qd_emu_ticks = 0;
QD_EXPORT_VAR QD_EMU_TLS long long qd_emu_share_blocks = 0;

// Race-check builds (-DQD_EMU_TSAN, kernel compiled with -fsanitize=thread, this file not):
// each fiber is a TSan thread, switched without implied synchronization, and barriers and
// warp collectives are the only happens-before edges between threads of a block.
#ifdef QD_EMU_TSAN
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_set_fiber_name(void* fiber, const char* name);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}
#endif

// Fiber stacks: generated kernels are shallow, but TSan-instrumented frames are larger, and a
// race build re-maps each stack when a fiber starts, which costs time per byte.
#ifndef QD_EMU_DEFAULT_STACK_KB
#ifdef QD_EMU_TSAN
#define QD_EMU_DEFAULT_STACK_KB 128
#else
#define QD_EMU_DEFAULT_STACK_KB 256
#endif
#endif

namespace {

struct Fiber;
void fiber_main(Fiber* f);

// ----------------------------------------------------------------------------- contexts

#if defined(__x86_64__) && !defined(QD_EMU_FORCE_UCONTEXT)
// Callee-saved registers, MXCSR and the x87 control word: all a SysV call may rely on.
extern "C" void qd_emu_switch(void** save_sp, void* new_sp);
extern "C" void qd_emu_trampoline();
asm(R"(
    .text
    .p2align 4
    .globl qd_emu_switch
    .hidden qd_emu_switch
    .type qd_emu_switch,@function
qd_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size qd_emu_switch, .-qd_emu_switch

    .p2align 4
    .globl qd_emu_trampoline
    .hidden qd_emu_trampoline
    .type qd_emu_trampoline,@function
qd_emu_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size qd_emu_trampoline, .-qd_emu_trampoline
)");

struct Context {
    void* sp;
};
inline void ctx_switch(Context* save, Context* to) { qd_emu_switch(&save->sp, to->sp); }
void ctx_make(Context* c, char* lo, size_t size, Fiber* f) {
    uintptr_t top = ((uintptr_t)(lo + size)) & ~(uintptr_t)15;
    unsigned long long* sp = (unsigned long long*)(top - 80);
    // [mxcsr | x87 cw] r15 r14 r13 r12 rbx rbp ret: after the pops and `ret`, rsp is 16-aligned
    // at the trampoline, which `call`s fiber_main as the ABI expects.
    sp[0] = 0x1f80ull | (0x037full << 32);
    sp[1] = 0;
    sp[2] = 0;
    sp[3] = (unsigned long long)(uintptr_t)&fiber_main;
    sp[4] = (unsigned long long)(uintptr_t)f;
    sp[5] = 0;
    sp[6] = 0;
    sp[7] = (unsigned long long)(uintptr_t)&qd_emu_trampoline;
    c->sp = sp;
}
#else
// Portable fallback: ucontext (slower: every switch is a sigprocmask system call).
struct Context {
    ucontext_t uc;
};
void uc_entry(unsigned lo, unsigned hi) { fiber_main((Fiber*)(((uintptr_t)hi << 32) | (uintptr_t)lo)); }
inline void ctx_switch(Context* save, Context* to) { swapcontext(&save->uc, &to->uc); }
void ctx_make(Context* c, char* lo, size_t size, Fiber* f) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = lo;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    uintptr_t p = (uintptr_t)f;
    makecontext(&c->uc, (void (*)())uc_entry, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
}
#endif

// ----------------------------------------------------------------------------- state

enum : unsigned char { NEW, READY, RUNNING, BLOCKED, DONE };
enum : unsigned char { W_NONE, W_BLOCK, W_WARP, W_SPIN };

struct Fiber {
    Context ctx;
    char* stack;           // low end of its stack while it has one
    unsigned tid;          // linear index in the block
    qd_emu_uint3 idx;
    unsigned char state, wait;
    int line;              // the barrier / collective it waits at, or its last loop line
    const char* what;
    unsigned long long value, result, mask;
    long long arg;
    long long clock_ns;    // the time it has run, once clock64() was first read (Sched::timing)
#ifdef QD_EMU_TSAN
    void* tsan;
#endif
};

inline long long qd_emu_now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct Group {  // one pending warp collective
    unsigned long long members, arrived;
    const char* what;
    int line, width;
    qd_emu_compute_fn fn;
    bool dynamic;  // members are whoever arrives before the warp converges (see converged())
    bool lax;      // a lane spinning in a loop counts as elsewhere (lockstep atomics: its own
                   // update stays atomic; a shuffle or vote cannot leave a lane out)
};
struct Warp {
    unsigned long long existing;  // lanes the block has (the last warp may be partial)
    int n, ndynamic;
    Group g[64];
};

size_t stack_size, page_size;
pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
struct sigaction old_actions[32];
const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
const size_t kAltStackBytes = 1 << 16;
#ifdef QD_EMU_TSAN
struct PoolFiber {
    void* tsan;
    char* stack;
    char name[64];
};
#endif

inline void cpu_relax() {  // in a spin: let the core's other hyperthread run
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void appendf(std::string& s, const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s += buf;
}

std::string tid_ranges(const std::vector<unsigned>& tids) {
    std::string s;
    for (size_t i = 0; i < tids.size();) {
        size_t j = i;
        while (j + 1 < tids.size() && tids[j + 1] == tids[j] + 1) ++j;
        if (!s.empty()) s += ", ";
        if (j == i) appendf(s, "%u", tids[i]);
        else appendf(s, "%u-%u", tids[i], tids[j]);
        i = j + 1;
    }
    return s;
}

std::string threads_text(const std::vector<unsigned>& tids) {
    std::string s;
    appendf(s, "%s %s", tids.size() == 1 ? "thread" : "threads", tid_ranges(tids).c_str());
    return s;
}

std::string block_text() {
    std::string s;
    if (gridDim.y == 1 && gridDim.z == 1) appendf(s, "block %u of %u", blockIdx.x, gridDim.x);
    else appendf(s, "block (%u, %u, %u) of (%u, %u, %u)", blockIdx.x, blockIdx.y, blockIdx.z, gridDim.x, gridDim.y, gridDim.z);
    return s;
}

// One OS thread's scheduler: the fibers of the block it runs, their barriers and warp
// collectives, and what a launch reports. The launching thread keeps one from launch to
// launch (its fiber stacks are reused); each worker of a parallel launch has its own.
struct Sched {
    std::vector<Fiber> fibers;
    std::vector<Warp> warps;
    std::vector<unsigned> queue;
    unsigned nthreads, warp_size, qhead, qcount, ndone;
    Fiber* cur;
    Context sched_ctx;
#ifdef QD_EMU_TSAN
    void* sched_tsan;
    // Sync objects of the running block: fresh heap bytes per block, so that a barrier in block
    // b+1 does not inherit block b's accesses (blocks are concurrent on a GPU). [0]: the block
    // barrier, [1 + w]: warp w.
    char* block_sync;
    char block_start;  // sync object: the scheduler's per-block setup happens before the block runs
    // TSan threads for the fibers, in `tsan_pools` sets of nthreads used by blocks in turn. They
    // live for the whole launch: TSan recycles the ids of destroyed threads, and two blocks
    // sharing an id would look like one thread's program order (the same holds, unavoidably,
    // for blocks a multiple of tsan_pools apart). Each has its own stack for the same reason.
    std::vector<PoolFiber> pool;
    unsigned tsan_pools;
#endif

    unsigned bar_arrived;
    int bar_count, bar_line;
    const char* bar_what;
    std::vector<Fiber*> bar_waiters;

#ifdef QD_EMU_TSAN
    char launch_done;  // sync object: every fiber's end happens before the launch returns
#endif
    qd_emu_call_fn g_call;
    qd_emu_block_fn g_direct;
    bool direct = false;       // QD_EMU_DIRECT: no fibers; `cur` stays null
    bool timing = false;       // clock64() was read in this launch: fiber switches are timed
    long long timing_since = 0;
    unsigned seen_tid;         // direct: the thread the last watchdog poll saw running
    void* g_ctx;
    int abort_code;
    std::string msg;
    unsigned long long progress, seen_progress;
    double seen_time, watchdog_s;
    char *sh_begin, *sh_end;
    bool poison;
    unsigned long long cur_block;

    std::vector<char*> free_stacks, all_stacks;

    // Signals: a fault in a kernel becomes an error for this launch, not the end of Python.
    sigjmp_buf sig_jmp;
    volatile sig_atomic_t in_kernel;
    pthread_t launch_thread;
    int sig_no, sig_code;
    void *sig_addr, *sig_pc;
    std::vector<char> alt_stack = std::vector<char>(kAltStackBytes);  // where the signal handler runs

    // ----------------------------------------------------------------------------- stacks

    char* get_stack() {
        if (!free_stacks.empty()) {
            char* s = free_stacks.back();
            free_stacks.pop_back();
            return s;
        }
        size_t total = stack_size + page_size;
        void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) {
            fprintf(stderr, "qd_simt: cannot map a %zu-byte fiber stack\n", total);
            abort();
        }
        mprotect(base, page_size, PROT_NONE);  // guard page: an overflow faults instead of corrupting
        all_stacks.push_back((char*)base);
        return (char*)base + page_size;
    }

#ifdef QD_EMU_TSAN
    // Replace whole pages by fresh ones: TSan's mmap hook then forgets every earlier access to
    // them (and records one by the scheduler, which happens before the fibers it starts next).
    void fresh_pages(char* p, size_t n) {
        if (mmap(p, n, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
            perror("qd_simt: mmap");
            abort();
        }
    }
#endif

    void release_stack(char* s) {
        if (s) free_stacks.push_back(s);
    }

    // ----------------------------------------------------------------------------- scheduling

    inline void activate(Fiber* f) {
        if (__builtin_expect(timing, 0)) {  // the time since the last switch was the previous fiber's
            long long now = qd_emu_now_ns();
            if (cur) cur->clock_ns += now - timing_since;
            timing_since = now;
        }
        cur = f;
        threadIdx = f->idx;
    }

    // clock64(): the running thread's own time in ns. The fibers of a block take turns on one
    // OS thread, so a wall clock would count the other threads' turns too; each fiber's count
    // advances only while it runs (as a GPU thread's does while its warp issues). Switches
    // are timed only from the launch's first read on: the kernels that never read it pay
    // nothing. A direct launch runs each thread to its end in turn: the wall clock is its own.
    long long clock() {
        long long now = qd_emu_now_ns();
        if (!cur) return now;
        if (!timing) {
            timing = true;
            timing_since = now;
        }
        return cur->clock_ns + (now - timing_since);
    }

    // The running thread's index in its block (a direct launch keeps no fiber for it).
    unsigned running_tid() const {
        return cur ? cur->tid : threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    }

    inline void push(Fiber* f) {
        unsigned slot = qhead + qcount++;
        if (slot >= nthreads) slot -= nthreads;
        queue[slot] = f->tid;
    }

    inline Fiber* pop() {
        Fiber* f = &fibers[queue[qhead]];
        if (++qhead == nthreads) qhead = 0;
        --qcount;
        return f;
    }

    inline void switch_to_sched(Fiber* f) {
#ifdef QD_EMU_TSAN
        __tsan_switch_to_fiber(sched_tsan, 1 /* no synchronization: fibers are concurrent threads */);
#endif
        ctx_switch(&f->ctx, &sched_ctx);
    }

    void suspend(Fiber* f) { switch_to_sched(f); }

    [[noreturn]] void abort_fiber(int code) {
        abort_code = code;
        if (direct) siglongjmp(sig_jmp, 2);  // back to run_share, down this OS thread's own stack
#ifdef QD_EMU_TSAN
        __tsan_release(&launch_done);  // the scheduler reads `msg`, which this fiber wrote
#endif
        switch_to_sched(cur);
        __builtin_unreachable();
    }

    void fiber_main(Fiber* f) {
        (void)f;
#ifdef QD_EMU_TSAN
        __tsan_acquire(&block_start);  // host writes before the launch, this block's fresh shared memory
#endif
        for (;;) {
            g_call(g_ctx);
            Fiber* me = cur;
            me->state = DONE;
            me->wait = W_NONE;
            ++ndone;
            ++progress;
            warp_changed(me->tid / warp_size);
#ifdef QD_EMU_TSAN
            __tsan_release(&launch_done);  // the launch returns after every thread: the host may read
#else
            if (qcount && fibers[queue[qhead]].state == NEW) {
                // Run the next thread right here, on this stack: no switch, no fresh stack.
                Fiber* nx = pop();
                nx->stack = me->stack;
                me->stack = nullptr;
                activate(nx);
                nx->state = RUNNING;
                continue;
            }
#endif
            // Nobody touches this stack before the switch below has left it.
#ifndef QD_EMU_TSAN
            release_stack(me->stack);
#endif
            me->stack = nullptr;
            switch_to_sched(me);
        }
    }

    void describe_block(std::string& s) {
        // Where every unfinished thread of the block is.
        struct Spot {
            unsigned char wait;
            int line;
            const char* what;
            std::vector<unsigned> tids;
        };
        std::vector<Spot> spots;
        std::vector<unsigned> done, fresh;
        for (auto& f : fibers) {
            if (f.state == DONE) { done.push_back(f.tid); continue; }
            if (f.state == NEW) { fresh.push_back(f.tid); continue; }
            // A fiber with no wait is either the one running (looping, or we would not be here)
            // or one a barrier just released.
            unsigned char w = f.wait != W_NONE ? f.wait : &f == cur ? (unsigned char)W_SPIN : (unsigned char)W_NONE;
            Spot* sp = nullptr;
            for (auto& x : spots)
                if (x.wait == w && x.line == f.line && (w == W_SPIN || w == W_NONE || strcmp(x.what, f.what) == 0)) sp = &x;
            if (!sp) {
                spots.push_back({w, f.line, (w == W_SPIN || w == W_NONE) ? "" : f.what, {}});
                sp = &spots.back();
            }
            sp->tids.push_back(f.tid);
        }
        for (auto& x : spots) {
            if (x.wait == W_SPIN) appendf(s, "; %s loop at @L%d@", threads_text(x.tids).c_str(), x.line);
            else if (x.wait == W_NONE) appendf(s, "; %s can run on from @L%d@", threads_text(x.tids).c_str(), x.line);
            else appendf(s, "; %s wait at %s at @L%d@", threads_text(x.tids).c_str(), x.what, x.line);
        }
        if (!fresh.empty()) appendf(s, "; %s never started", threads_text(fresh).c_str());
        if (!done.empty()) appendf(s, "; %s finished", threads_text(done).c_str());
    }

    void report_deadlock() {
        msg.clear();
        appendf(msg, "deadlock in %s (%u threads): no thread can continue", block_text().c_str(), nthreads);
        describe_block(msg);
        // Warp collectives: name the lanes each one still waits for.
        for (size_t w = 0; w < warps.size(); ++w) {
            for (int i = 0; i < warps[w].n; ++i) {
                const Group& g = warps[w].g[i];
                std::vector<unsigned> missing;
                for (unsigned l = 0; l < warp_size; ++l)
                    if (((g.members >> l) & 1) && !((g.arrived >> l) & 1)) missing.push_back((unsigned)(w * warp_size + l));
                if (!missing.empty())
                    appendf(msg, "; %s at @L%d@ in warp %zu still needs %s", g.what, g.line, w, threads_text(missing).c_str());
            }
        }
        if (bar_arrived) appendf(msg, "; a block barrier completes only when all %u threads of the block reach it", nthreads);
        abort_code = QD_EMU_DEADLOCK;
    }

    void check_watchdog(int line) {
        if (direct && running_tid() != seen_tid) {  // a thread has finished since the last poll
            seen_tid = running_tid();
            ++progress;
        }
        if (progress != seen_progress) {
            seen_progress = progress;
            seen_time = now();
            return;
        }
        if (now() - seen_time <= watchdog_s) return;
        msg.clear();
        appendf(msg, "no progress for %.1f s in %s: thread %u is looping at @L%d@", watchdog_s, block_text().c_str(),
                running_tid(), line);
        if (!direct) describe_block(msg);
        appendf(msg, ". Blocks run one at a time in index order here, so a block that waits for a later "
                     "block (or a spin on a value nothing writes) never finishes");
        abort_fiber(QD_EMU_HANG);
    }

    void run_block(unsigned long long b) {
        cur_block = b;
        blockIdx.x = (unsigned)(b % gridDim.x);
        blockIdx.y = (unsigned)((b / gridDim.x) % gridDim.y);
        blockIdx.z = (unsigned)(b / ((unsigned long long)gridDim.x * gridDim.y));
        ++progress;
        if (direct) {
            g_direct(g_ctx);
            return;
        }
        for (unsigned i = 0; i < nthreads; ++i) {
            fibers[i].state = NEW;
            fibers[i].clock_ns = 0;
            fibers[i].wait = W_NONE;
            queue[i] = i;
        }
        qhead = 0;
        qcount = nthreads;
        ndone = 0;
        bar_arrived = 0;
        bar_waiters.clear();
        for (auto& w : warps) w.n = w.ndynamic = 0;
#ifdef QD_EMU_TSAN
        block_sync = (char*)malloc(warps.size() + 1);
        // Shared memory is a new allocation for every block: forget the last block's accesses.
        // In race builds every __shared__ variable is page-aligned and the race driver ends the
        // section with a page of padding, so the section minus its last page is whole pages.
        if (sh_begin && sh_end - sh_begin > (std::ptrdiff_t)page_size) fresh_pages(sh_begin, (size_t)(sh_end - sh_begin) - page_size);
        unsigned set = (unsigned)(b % tsan_pools);
        for (unsigned t = 0; t < nthreads; ++t) {
            PoolFiber& p = pool[set * nthreads + t];
            if (!p.tsan) {
                p.tsan = __tsan_create_fiber(0);
                p.stack = get_stack();
            }
            snprintf(p.name, sizeof p.name, "thread %u of %s", t, block_text().c_str());
            __tsan_set_fiber_name(p.tsan, p.name);
            fibers[t].tsan = p.tsan;
        }
        __tsan_release(&block_start);
#endif
        if (poison && sh_begin && sh_end > sh_begin) {
            // Shared memory starts out as garbage on a GPU: make reads before writes visible.
            // 0x7fffffff is a NaN as f32 and (twice) as f64, and INT_MAX as i32.
            size_t n = (size_t)(sh_end - sh_begin);
            for (size_t i = 0; i < n; ++i) sh_begin[i] = (char)((i & 3) == 3 ? 0x7f : 0xff);
        }
        while (qcount) {
            Fiber* f = pop();
            activate(f);
            if (f->state == NEW) {
#ifdef QD_EMU_TSAN
                f->stack = pool[(unsigned)(b % tsan_pools) * nthreads + f->tid].stack;
#else
                f->stack = get_stack();
#endif
                ctx_make(&f->ctx, f->stack, stack_size, f);
            }
            f->state = RUNNING;
#ifdef QD_EMU_TSAN
            __tsan_switch_to_fiber(f->tsan, 1);
#endif
            ctx_switch(&sched_ctx, &f->ctx);
            if (abort_code) return;
        }
#ifdef QD_EMU_TSAN
        free(block_sync);
        block_sync = nullptr;
#endif
        if (ndone != nthreads) report_deadlock();
    }

    void describe_signal() {
        msg.clear();
        const char* what = "crashed";
        bool overflow = false;
        for (char* s : all_stacks)
            if ((char*)sig_addr >= s && (char*)sig_addr < s + page_size) overflow = true;
        if (sig_no == SIGFPE) what = sig_code == FPE_INTDIV ? "integer division by zero" : "arithmetic fault (SIGFPE)";
        else if (overflow) what = "stack overflow";
        else if (sig_no == SIGSEGV) what = "invalid memory access (SIGSEGV)";
        else if (sig_no == SIGBUS) what = "bus error (SIGBUS)";
        // -fsanitize=signed-integer-overflow traps with ud2: a signed overflow the generated
        // code must never have (C++ leaves it undefined; GPU compilers optimize on that).
        else if (sig_no == SIGILL) what = "signed integer overflow in the generated code, undefined in C++ (SIGILL)";
        appendf(msg, "%s", what);
        if (cur || direct) appendf(msg, " in thread %u of %s", running_tid(), block_text().c_str());
        if (sig_no == SIGSEGV && !overflow) appendf(msg, ", address %p", sig_addr);
        Dl_info pc_info, kernel_info;
        if (sig_pc && dladdr(sig_pc, &pc_info) && dladdr((void*)g_call, &kernel_info) &&
            pc_info.dli_fbase == kernel_info.dli_fbase)
            appendf(msg, " at @PC%llx@", (unsigned long long)((char*)sig_pc - (char*)pc_info.dli_fbase));
        else if (sig_pc && dladdr(sig_pc, &pc_info) && pc_info.dli_fname)
            appendf(msg, " inside %s%s%s", pc_info.dli_fname, pc_info.dli_sname ? " " : "", pc_info.dli_sname ? pc_info.dli_sname : "");
    }

    // The blocks [first, last) of a launch, on this thread. Returns the status; on an error `msg`
    // explains and `cur_block` is the block that failed.
    int run_share(qd_emu_call_fn call, qd_emu_block_fn direct_fn, void* ctx, const qd_emu_config* cfg, unsigned wsize,
                  unsigned nt, char* shared_begin, char* shared_end, unsigned long long first, unsigned long long last) {
        g_call = call;
        g_direct = direct_fn;
#ifdef QD_EMU_TSAN
        direct = false;  // a race check runs every thread as a TSan fiber: the threads it tells apart
#else
        direct = (cfg->flags & QD_EMU_DIRECT) != 0 && direct_fn;
#endif
        seen_tid = ~0u;
        timing = false;
        g_ctx = ctx;
        warp_size = wsize;
        nthreads = nt;
        gridDim = {(unsigned)cfg->grid[0], (unsigned)cfg->grid[1], (unsigned)cfg->grid[2]};
        blockDim = {(unsigned)cfg->block[0], (unsigned)cfg->block[1], (unsigned)cfg->block[2]};
        fibers.assign(nthreads, Fiber{});
        for (unsigned t = 0; t < nthreads; ++t) {
            fibers[t].tid = t;
            fibers[t].idx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
        }
        unsigned nwarps = (nthreads + warp_size - 1) / warp_size;
        warps.resize(nwarps);
        for (unsigned w = 0; w < nwarps; ++w) {
            unsigned lanes = nthreads - w * warp_size < warp_size ? nthreads - w * warp_size : warp_size;
            warps[w].existing = lanes == 64 ? ~0ull : ((1ull << lanes) - 1);
            warps[w].n = warps[w].ndynamic = 0;
        }
        queue.assign(nthreads, 0);
        bar_waiters.clear();
        bar_waiters.reserve(nthreads);  // no allocation (and no TSan-visible memmove) inside a block
        free_stacks.reserve(all_stacks.size() + nthreads);
        abort_code = 0;
        msg.clear();
        watchdog_s = cfg->watchdog_ms / 1000.0;
        sh_begin = shared_begin;
        sh_end = shared_end;
        poison = (cfg->flags & QD_EMU_POISON_SHARED) != 0;
        cur = nullptr;
        cur_block = first;
        progress = 1;
        seen_progress = 0;
#ifdef QD_EMU_TSAN
        sched_tsan = __tsan_get_current_fiber();
        {
            // TSan (v2) allows 8128 threads: as many sets as fit, at most 8.
            unsigned long long total = (unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
            unsigned fit = 6000 / nthreads;
            tsan_pools = (unsigned)std::min<unsigned long long>(total, std::max(1u, std::min(8u, fit)));
            pool.assign((size_t)tsan_pools * nthreads, PoolFiber{});
        }
#endif

        // Faults are caught on a stack of this thread's own (a fiber that overflowed its stack
        // has none left); the handler is the launch's (qd_emu_run).
        stack_t alt, old_alt;
        alt.ss_sp = alt_stack.data();
        alt.ss_size = alt_stack.size();
        alt.ss_flags = 0;
        sigaltstack(&alt, &old_alt);
        launch_thread = pthread_self();
        in_kernel = 1;

        // A plain launch's failed block runs again, thread by thread (`call`, see
        // QD_EMU_PLAIN_RERUN), to name the thread; what the first run said stands if it passes.
        // A whole share in one call (QD_EMU_PLAIN_SHARE: a reduction, one partial per share)
        // reruns element by element, all its blocks, to find the thread.
        volatile bool rerun = false;
        volatile int first_code = 0;
        std::string first_msg;
        const bool whole = direct && (cfg->flags & QD_EMU_PLAIN_SHARE);
        for (;;) {
            int jumped = sigsetjmp(sig_jmp, 1);
            if (jumped == 0 && whole && !rerun) {
                qd_emu_share_blocks = (long long)(last - first);
                if (last > first) run_block(first);
            } else if (jumped == 0) {
                bool one = rerun && !whole;
                unsigned long long b0 = one ? cur_block : first, b1 = one ? cur_block + 1 : last;
                for (unsigned long long b = b0; b < b1 && !abort_code; ++b) run_block(b);
            } else if (jumped == 1) {  // a signal (2: a direct thread's abort_fiber, which set msg)
                in_kernel = 0;
                describe_signal();
                abort_code = QD_EMU_SIGNAL;
            }
            if (rerun && !abort_code) {
                abort_code = first_code;
                msg = first_msg;
            }
            bool faulted = abort_code == QD_EMU_TRAP || abort_code == QD_EMU_SIGNAL;
            if (!faulted || rerun || !(cfg->flags & QD_EMU_PLAIN_RERUN) || !direct) break;
            rerun = true;
            first_code = abort_code;
            first_msg = msg;
            abort_code = 0;
            g_direct = call;
            in_kernel = 1;
        }
        in_kernel = 0;
        sigaltstack(&old_alt, nullptr);

#ifdef QD_EMU_TSAN
        for (auto& f : fibers) f.stack = nullptr;  // pool stacks, released below
        for (auto& p : pool) {
            if (p.tsan) __tsan_destroy_fiber(p.tsan);
            release_stack(p.stack);
        }
        pool.clear();
        free(block_sync);
        block_sync = nullptr;
        __tsan_acquire(&launch_done);
#else
        for (auto& f : fibers) {
            release_stack(f.stack);
            f.stack = nullptr;
        }
#endif
        cur = nullptr;
        return abort_code;
    }

    // A collective whose members are "the lanes that got here" (__activemask, HIP's mask-free
    // __shfl/__ballot): it completes once every other lane of the warp is somewhere else for
    // good: finished, or waiting at a barrier or another collective. That is what a GPU's
    // active mask is at that point: the lanes that took this path together. (A lane that only
    // yielded at a loop back-edge is still on its way, possibly to this very call.)
    bool at_lockstep_atomic(unsigned w, unsigned lane) {
        const Warp& W = warps[w];
        for (int i = 0; i < W.n; ++i)
            if (W.g[i].lax && ((W.g[i].arrived >> lane) & 1)) return true;
        return false;
    }

    bool converged(unsigned w, const Group& g) {
        unsigned base = w * warp_size;
        for (unsigned l = 0; l < warp_size; ++l) {
            if (!((warps[w].existing >> l) & 1) || ((g.arrived >> l) & 1)) continue;
            const Fiber& o = fibers[base + l];
            // For a lockstep atomic, a lane spinning in a loop (it yielded at a back-edge) is
            // elsewhere too: waiting for it would deadlock a lock a lane of its own warp holds.
            if (o.state != DONE && o.state != BLOCKED && !(g.lax && o.state == READY && o.wait == W_SPIN)) return false;
            // A lane waiting at a lockstep atomic is only behind, not elsewhere: that atomic went
            // ahead without lanes still spinning in a loop, so the warp's lanes may have come apart
            // in a loop they all run (a uniform one). A shuffle or vote after the loop waits for
            // it, as the reconverged warp on a GPU would. (The atomic never waits for a lane
            // blocked here, so this cannot deadlock.)
            if (!g.lax && o.state == BLOCKED && o.wait == W_WARP && at_lockstep_atomic(w, l)) return false;
        }
        return true;
    }

    // Run a complete collective: compute every member's result, wake the members but `self`.
    void complete(unsigned w, int gi, Fiber* self) {
        Warp& W = warps[w];
        Group g = W.g[gi];
        W.g[gi] = W.g[--W.n];
        if (g.dynamic) --W.ndynamic;
        unsigned base = w * warp_size;
        qd_emu_lanes L;
        L.members = g.arrived;
        L.width = g.width;
        L.warp_size = (int)warp_size;
        for (unsigned l = 0; l < warp_size; ++l) {
            if (!((g.arrived >> l) & 1)) continue;
            L.value[l] = fibers[base + l].value;
            L.arg[l] = fibers[base + l].arg;
            L.result[l] = 0;
        }
        g.fn(&L);
        if (!g.lax) ++progress;  // an atomic is no progress: a loop of them may still spin forever
        for (unsigned l = 0; l < warp_size; ++l) {
            if (!((g.arrived >> l) & 1)) continue;
            Fiber* o = &fibers[base + l];
            o->result = L.result[l];
            if (o != self) {
                o->state = READY;
                o->wait = W_NONE;
                push(o);
            }
        }
    }

    // A lane of warp w went elsewhere for good: a convergence collective may be complete now.
    void warp_changed(unsigned w) {
        Warp& W = warps[w];
        for (int i = 0; W.ndynamic && i < W.n;) {
            if (W.g[i].dynamic && converged(w, W.g[i])) complete(w, i, nullptr);  // entry i replaced: look again
            else ++i;
        }
    }

    [[noreturn]] void warp_divergence(unsigned w, Fiber* f, const char* what, int line, unsigned long long m, const Group& g) {
        std::vector<unsigned> waiting;
        for (unsigned l = 0; l < warp_size; ++l)
            if ((g.arrived >> l) & 1) waiting.push_back(w * warp_size + l);
        msg.clear();
        appendf(msg, "warp divergence in %s, warp %u: thread %u calls %s at @L%d@ (mask 0x%llx) while %s wait at "
                     "%s at @L%d@ (mask 0x%llx); lanes named in a mask must all call the same collective",
                block_text().c_str(), w, f->tid, what, line, m, threads_text(waiting).c_str(), g.what, g.line, g.members);
        abort_fiber(QD_EMU_DEADLOCK);
    }

    // A direct launch's threads never meet (CpuBackend.load checks the task): one that would is
    // the backend's mistake, told as such rather than run wrong.
    [[noreturn]] void not_direct(int line, const char* what) {
        msg.clear();
        appendf(msg, "internal error: thread %u of %s reached %s at @L%d@ in a task run without fibers", running_tid(),
                block_text().c_str(), what, line);
        abort_fiber(QD_EMU_TRAP);
    }

    int block_barrier(int line, const char* what, int pred) {
        if (direct) not_direct(line, what);
        Fiber* f = cur;
        f->line = line;
        f->what = what;
        if (bar_arrived == 0) {
            bar_line = line;
            bar_what = what;
            bar_count = 0;
        } else if (line != bar_line || strcmp(what, bar_what) != 0) {
            std::vector<unsigned> waiting;
            for (Fiber* w : bar_waiters) waiting.push_back(w->tid);
            msg.clear();
            appendf(msg, "barrier divergence in %s: thread %u reached %s at @L%d@ while %s wait at %s at @L%d@ "
                         "(every thread of a block must reach the same barrier)",
                    block_text().c_str(), f->tid, what, line, threads_text(waiting).c_str(), bar_what, bar_line);
            abort_fiber(QD_EMU_DEADLOCK);
        }
        bar_count += pred != 0;
#ifdef QD_EMU_TSAN
        __tsan_release(block_sync);
#endif
        if (++bar_arrived == nthreads) {
            int r = bar_count;
            bar_arrived = 0;
            ++progress;
            for (Fiber* w : bar_waiters) {
                w->result = (unsigned long long)r;
                w->state = READY;
                w->wait = W_NONE;
                push(w);
            }
            bar_waiters.clear();
#ifdef QD_EMU_TSAN
            __tsan_acquire(block_sync);
#endif
            return r;
        }
        f->wait = W_BLOCK;
        f->state = BLOCKED;
        bar_waiters.push_back(f);
        warp_changed(f->tid / warp_size);
        suspend(f);
#ifdef QD_EMU_TSAN
        __tsan_acquire(block_sync);
#endif
        return (int)f->result;
    }

    unsigned long long warp_op(int line, const char* what, unsigned long long mask, int converge,
                               unsigned long long value, long long arg, int width, qd_emu_compute_fn fn) {
        if (direct) not_direct(line, what);
        Fiber* f = cur;
        unsigned w = f->tid / warp_size, lane = f->tid % warp_size;
        Warp& W = warps[w];
        unsigned long long bit = 1ull << lane;
        f->line = line;
        f->what = what;
        f->value = value;
        f->arg = arg;
        int gi = -1;
        if (converge) {
            for (int i = 0; i < W.n; ++i)
                if (W.g[i].dynamic && W.g[i].line == line && W.g[i].fn == fn && strcmp(W.g[i].what, what) == 0) gi = i;
            if (gi < 0) {
                gi = W.n++;
                W.g[gi] = Group{0, 0, what, line, width, fn, true, converge == 2};
                ++W.ndynamic;
            }
            W.g[gi].members |= bit;
        } else {
            unsigned long long m = mask & W.existing;
            if (!(m & bit)) {
                msg.clear();
                appendf(msg, "thread %u (lane %u of warp %u) in %s calls %s at @L%d@ with mask 0x%llx, which leaves out its "
                             "own lane", f->tid, lane, w, block_text().c_str(), what, line, mask);
                abort_fiber(QD_EMU_DEADLOCK);
            }
            for (int i = 0; i < W.n; ++i)
                if (!W.g[i].dynamic && (W.g[i].members & m)) gi = i;
            if (gi >= 0) {
                const Group& g = W.g[gi];
                if (g.members != m || strcmp(g.what, what) != 0 || g.fn != fn) warp_divergence(w, f, what, line, m, g);
            } else {
                gi = W.n++;
                W.g[gi] = Group{m, 0, what, line, width, fn, false, false};
            }
        }
#ifdef QD_EMU_TSAN
        __tsan_release(block_sync + 1 + w);
#endif
        Group& g = W.g[gi];
        g.arrived |= bit;
        if (g.dynamic ? converged(w, g) : g.arrived == g.members) {
            complete(w, gi, f);
        } else {
            f->wait = W_WARP;
            f->state = BLOCKED;
            warp_changed(w);  // this lane is now elsewhere for another convergence collective
            if (f->state == BLOCKED) suspend(f);
        }
#ifdef QD_EMU_TSAN
        __tsan_acquire(block_sync + 1 + w);
#endif
        return f->result;
    }

    void tick_slow(int line) {
        check_watchdog(line);
        if (direct) return;  // nobody else to run: the thread goes on
        Fiber* f = cur;
        f->line = line;
        if (qcount) {  // let the rest of the block run: it may be what this loop waits for
            f->state = READY;
            f->wait = W_SPIN;
            push(f);
            warp_changed(f->tid / warp_size);  // a collective its warp-mates wait at may complete
            suspend(f);
            f->wait = W_NONE;
        }
    }

    [[noreturn]] void trap(int line, const char* what) {
        msg.clear();
        appendf(msg, "thread %u of %s executed %s at @L%d@", running_tid(), block_text().c_str(), what, line);
        abort_fiber(QD_EMU_TRAP);
    }

};

// This thread's scheduler (initial-exec: a signal handler reads it).
QD_EMU_TLS Sched* S = nullptr;
Sched main_sched;  // the launching thread's

// The threads that run the other shares of a parallel launch, kept from launch to launch with
// their schedulers (and fiber stacks): starting and joining threads for each launch cost about
// 0.1 ms here. Never freed: they wait for work until the process ends. A forked child (Python's
// multiprocessing) has none of its parent's threads and starts its own.
struct Helpers {
    pid_t pid;
    std::mutex m;
    std::condition_variable wake, done;
    std::function<void(unsigned, Sched*)> job;  // share k + 1 on helper k
    std::atomic<unsigned long long> generation{0};  // bumped for each job
    unsigned started = 0, taking = 0, left = 0;
};
Helpers* helper_pool = nullptr;
const double kHelperSpinSeconds = 200e-6;

void helper_main(Helpers* h, unsigned k) {
    Sched sched;
    S = &sched;
    unsigned long long seen = 0;
    std::unique_lock<std::mutex> lock(h->m);
    for (;;) {
        // A program launching kernel after kernel finds its helpers awake: they poll for the
        // next job for a while before they sleep (waking a sleeping one costs 50-70 us here).
        lock.unlock();
        double until = now() + kHelperSpinSeconds;
        while (h->generation.load(std::memory_order_acquire) == seen && now() < until) cpu_relax();
        lock.lock();
        h->wake.wait(lock, [&] { return h->generation.load() != seen; });
        seen = h->generation.load();
        if (k >= h->taking) continue;
        lock.unlock();
        h->job(k, &sched);
        lock.lock();
        if (--h->left == 0) h->done.notify_one();
    }
}

// At least `want` helpers where the system gives them (called under launch_lock).
Helpers* helpers(unsigned long long want) {
    if (!helper_pool || helper_pool->pid != getpid()) {
        helper_pool = new Helpers;
        helper_pool->pid = getpid();
    }
    Helpers* h = helper_pool;
    while (h->started < want) {
        try {
            std::thread(helper_main, h, h->started).detach();
        } catch (...) {  // no more threads to be had: the launching thread runs the rest
            break;
        }
        std::lock_guard<std::mutex> lock(h->m);
        ++h->started;
    }
    return h;
}

void fiber_main(Fiber* f) { S->fiber_main(f); }

void on_signal(int sig, siginfo_t* si, void* ucv) {
    Sched* s = S;
    if (!s || !s->in_kernel || !pthread_equal(pthread_self(), s->launch_thread)) {
        // Not ours: put the previous handler back; the faulting instruction runs again into it.
        sigaction(sig, &old_actions[sig], nullptr);
        return;
    }
    ucontext_t* uc = (ucontext_t*)ucv;
#if defined(__x86_64__)
    s->sig_pc = (void*)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    s->sig_pc = (void*)uc->uc_mcontext.pc;
#else
    s->sig_pc = nullptr;
    (void)uc;
#endif
    s->sig_no = sig;
    s->sig_code = si->si_code;
    s->sig_addr = si->si_addr;
#ifdef QD_EMU_TSAN
    __tsan_switch_to_fiber(s->sched_tsan, 1);  // TSan finds the jump buffer in the thread that set it
#endif
    siglongjmp(s->sig_jmp, 1);
}

}  // namespace

// ----------------------------------------------------------------------------- the ABI

QD_EXPORT int qd_emu_run(qd_emu_call_fn call, qd_emu_block_fn direct, void* ctx, const qd_emu_config* cfg, int wsize,
                         char* shared_begin, char* shared_end, char* err, int errlen) {
    for (int i = 0; i < 3; ++i) {
        if (cfg->grid[i] < 1 || cfg->block[i] < 1 || cfg->grid[i] > 0x7fffffff) {
            snprintf(err, errlen, "bad launch: grid (%lld, %lld, %lld), block (%lld, %lld, %lld)", cfg->grid[0],
                     cfg->grid[1], cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2]);
            return QD_EMU_BAD_LAUNCH;
        }
    }
    long long nt = cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (nt > 4096 || wsize < 1 || wsize > 64) {
        snprintf(err, errlen, "bad launch: %lld threads per block (warp size %d)", nt, wsize);
        return QD_EMU_BAD_LAUNCH;
    }
    pthread_mutex_lock(&launch_lock);
    if (!page_size) {
        page_size = (size_t)sysconf(_SC_PAGESIZE);
        const char* kb = getenv("QD_EMU_STACK_KB");
        stack_size = (size_t)(kb ? atol(kb) : QD_EMU_DEFAULT_STACK_KB) * 1024;
        stack_size = (stack_size + page_size - 1) / page_size * page_size;
    }
    unsigned long long total = (unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    unsigned long long first = cfg->first_block < 0 ? 0 : (unsigned long long)cfg->first_block;
    unsigned long long last = total;
    if (cfg->last_block >= 0 && (unsigned long long)cfg->last_block < total) last = (unsigned long long)cfg->last_block;
    unsigned long long n = last > first ? last - first : 0;
    unsigned long long workers = cfg->workers > 1 ? (unsigned long long)cfg->workers : 1;
#ifdef QD_EMU_TSAN
    workers = 1;  // a race check runs every fiber as a TSan thread of one OS thread
#endif
    if (workers > n) workers = n > 0 ? n : 1;

    // A fault becomes an error for this launch, not the end of Python: the handler is the
    // process's while the launch runs, and each thread of the launch catches its own.
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaction(s, &sa, &old_actions[s]);

    unsigned w = (unsigned)wsize, threads = (unsigned)nt;
    S = &main_sched;
    int rc;
    if (workers == 1) {
        rc = main_sched.run_share(call, direct, ctx, cfg, w, threads, shared_begin, shared_end, first, last);
        if (rc) snprintf(err, errlen, "%s", main_sched.msg.c_str());
    } else {
        // A grid-free task (no barrier, collective, shared array, fence or print): its blocks
        // are independent, so contiguous runs of them go to separate OS threads. Each stops
        // at its first error; the one reported is in the lowest block, where a run in index
        // order would have stopped.
        struct Share {
            unsigned long long first, last, failed;
            int rc;
            bool ran;
            std::string text;
        };
        std::vector<Share> shares(workers);
        for (unsigned long long k = 0; k < workers; ++k) {
            shares[k].first = first + n * k / workers;
            shares[k].last = first + n * (k + 1) / workers;
            shares[k].ran = false;
        }
        auto run = [&](Share* share, Sched* sched) {
            share->rc = sched->run_share(call, direct, ctx, cfg, w, threads, shared_begin, shared_end, share->first,
                                         share->last);
            share->failed = sched->cur_block;
            if (share->rc) share->text = sched->msg;
            share->ran = true;
        };
        Helpers* h = helpers(workers - 1);
        {
            std::lock_guard<std::mutex> lock(h->m);
            h->job = [&](unsigned k, Sched* sched) { run(&shares[k + 1], sched); };
            h->taking = h->left = (unsigned)std::min<unsigned long long>(workers - 1, h->started);
            ++h->generation;
        }
        h->wake.notify_all();
        run(&shares[0], &main_sched);
        {
            std::unique_lock<std::mutex> lock(h->m);
            h->done.wait(lock, [h] { return h->left == 0; });
            h->job = nullptr;
        }
        for (auto& share : shares)  // the helpers there were no threads for
            if (!share.ran) run(&share, &main_sched);
        const Share* bad = nullptr;
        for (auto& share : shares)
            if (share.rc && (!bad || share.failed < bad->failed)) bad = &share;
        rc = bad ? bad->rc : QD_EMU_OK;
        if (bad) snprintf(err, errlen, "%s", bad->text.c_str());
    }
    for (int s : kSignals) sigaction(s, &old_actions[s], nullptr);
    pthread_mutex_unlock(&launch_lock);
    return rc;
}

QD_EXPORT int qd_emu_block_barrier(int line, const char* what, int pred) { return S->block_barrier(line, what, pred); }

QD_EXPORT unsigned long long qd_emu_warp_op(int line, const char* what, unsigned long long mask, int converge,
                                            unsigned long long value, long long arg, int width, qd_emu_compute_fn fn) {
    return S->warp_op(line, what, mask, converge, value, arg, width, fn);
}

QD_EXPORT void qd_emu_tick_slow(int line) { S->tick_slow(line); }

QD_EXPORT void qd_emu_yield(int line) { S->tick_slow(line); }  // __nanosleep: a loop back-edge's yield, now

QD_EXPORT void qd_emu_trap(int line, const char* what) { S->trap(line, what); }

QD_EXPORT long long qd_emu_clock() { return S->clock(); }
