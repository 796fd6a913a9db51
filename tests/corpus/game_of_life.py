"""Taichi's Game of Life (integer fields, a @ti.func with a conditional expression, ti.static over rule lists).

Source: taichi-dev/taichi, python/taichi/examples/simulation/game_of_life.py, commit ba0e81dce559fb63a5958bf82feb1d00c55c02fe,
Apache-2.0 (Copyright The Taichi Authors). Changed: the import (``qd`` from the corpus runner,
named ``ti`` as the kernels spell it), ``ti.init`` (the runner's executor), the start (``init()`` still runs; then the cells from seeded
NumPy, as ``ti.random`` differs between runtimes) and the GUI loop: 100 generations, then the fields
are dumped.
"""
# ruff: noqa
# Tolerance: integers only: exact.
CORPUS_RTOL = 0.0
STEPS = 100
# Game of Life written in 100 lines of Taichi
# In memory of John Horton Conway (1937 - 2020)

import numpy as np

import _corpus
from _corpus import qd as ti

_corpus.init()

n = 64
cell_size = 8
img_size = n * cell_size
alive = ti.field(int, shape=(n, n))  # alive = 1, dead = 0
count = ti.field(int, shape=(n, n))  # count of neighbours


@ti.func
def get_alive(i, j):
    return alive[i, j] if 0 <= i < n and 0 <= j < n else 0


@ti.func
def get_count(i, j):
    return (
        get_alive(i - 1, j)
        + get_alive(i + 1, j)
        + get_alive(i, j - 1)
        + get_alive(i, j + 1)
        + get_alive(i - 1, j - 1)
        + get_alive(i + 1, j - 1)
        + get_alive(i - 1, j + 1)
        + get_alive(i + 1, j + 1)
    )


# See https://www.conwaylife.com/wiki/Cellular_automaton#Rules for more rules
B, S = [3], [2, 3]
# B, S = [2], [0]


@ti.func
def calc_rule(a, c):
    if a == 0:
        for t in ti.static(B):
            if c == t:
                a = 1
    elif a == 1:
        a = 0
        for t in ti.static(S):
            if c == t:
                a = 1
    return a


@ti.kernel
def run():
    for i, j in alive:
        count[i, j] = get_count(i, j)

    for i, j in alive:
        alive[i, j] = calc_rule(alive[i, j], count[i, j])


@ti.kernel
def init():
    for i, j in alive:
        if ti.random() > 0.8:
            alive[i, j] = 1
        else:
            alive[i, j] = 0


def main():
    init()
    # the start from seeded NumPy in place of ti.random() (the same density)
    alive.from_numpy((_corpus.rng().random((n, n)) > 0.8).astype(np.int32))
    for k in range(STEPS):
        run()
    _corpus.dump(alive=alive, count=count)


if __name__ == "__main__":
    main()
