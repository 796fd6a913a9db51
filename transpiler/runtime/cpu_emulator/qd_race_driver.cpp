// qd_race_driver.cpp: main() of a race-check run. ThreadSanitizer must start with the
// process, so a race-checked kernel runs in a child: this program reads the arguments and
// launches from a file, runs them, and writes the arrays back to another file.
//
// Input:  u32 nargs; per argument u32 kind (0 array, 1 scalar), u64 nbytes, bytes;
//         u32 nlaunches; per launch u32 entry index, i64 cfg[11] (see qd_emu::launch).
// Output: the arrays' bytes, in argument order.
// stderr: "QD_RACE_ARRAY <arg> <begin> <end>" and "QD_RACE_SHARED <begin> <end>" so the
//         parent can name the memory a report is about; "QD_EMU_ERROR <rc>" + message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
typedef int (*qd_entry_fn)(void**, const long long*, char*, int);
extern qd_entry_fn const qd_race_entries[];
extern const int qd_race_nentries;
extern char __start_qd_shared[] __attribute__((weak));
extern char __stop_qd_shared[] __attribute__((weak));
}

// Linked after the kernel, so it closes the section: the kernel's page-aligned __shared__
// variables then fill whole pages the runtime may remap (qd_simt_rt.cpp, fresh_pages).
__attribute__((section("qd_shared"), aligned(4096), used)) char qd_shared_end_pad[4096];

static bool get(FILE* f, void* p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    FILE* in = fopen(argv[1], "rb");
    if (!in) { perror(argv[1]); return 2; }
    uint32_t nargs = 0;
    get(in, &nargs, 4);
    std::vector<void*> data(nargs), holders(nargs), args(nargs);
    std::vector<uint64_t> sizes(nargs);
    std::vector<uint32_t> kinds(nargs);
    for (uint32_t i = 0; i < nargs; ++i) {
        get(in, &kinds[i], 4);
        get(in, &sizes[i], 8);
        size_t cap = ((sizes[i] + 63) / 64 + 1) * 64;
        data[i] = aligned_alloc(64, cap);
        memset(data[i], 0, cap);
        if (!get(in, data[i], sizes[i])) { fprintf(stderr, "short input\n"); return 2; }
        if (kinds[i] == 0) {
            holders[i] = data[i];
            args[i] = &holders[i];
            fprintf(stderr, "QD_RACE_ARRAY %u %p %p\n", i, data[i], (char*)data[i] + sizes[i]);
        } else {
            args[i] = data[i];
        }
    }
    if (__start_qd_shared) fprintf(stderr, "QD_RACE_SHARED %p %p\n", (void*)__start_qd_shared, (void*)__stop_qd_shared);
    uint32_t nl = 0;
    get(in, &nl, 4);
    static char err[1 << 16];
    for (uint32_t k = 0; k < nl; ++k) {
        uint32_t entry = 0;
        long long cfg[11];
        get(in, &entry, 4);
        get(in, cfg, sizeof cfg);
        if ((int)entry >= qd_race_nentries) { fprintf(stderr, "bad entry %u\n", entry); return 2; }
        int rc = qd_race_entries[entry](args.data(), cfg, err, sizeof err);
        if (rc) {
            fprintf(stderr, "QD_EMU_ERROR %d\n%s\n", rc, err);
            return 3;
        }
    }
    fclose(in);
    FILE* out = fopen(argv[2], "wb");
    if (!out) { perror(argv[2]); return 2; }
    for (uint32_t i = 0; i < nargs; ++i)
        if (kinds[i] == 0 && sizes[i]) fwrite(data[i], 1, sizes[i], out);
    fclose(out);
    return 0;
}
