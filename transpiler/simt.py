"""``qd.simt``: thread indexing, barriers, fences and shared memory, by scope.

``qd.simt.block`` works on the threads of one block (CUDA CTA, Vulkan/Metal workgroup),
``qd.simt.grid`` across all blocks of a launch. Each function is a marker the frontend
lowers to an IR node; see ``shared/seeds`` for their semantics."""
from types import SimpleNamespace

from .lang import builtin


@builtin("block.thread_idx")
def _thread_idx(): ...


@builtin("block.global_thread_idx")
def _global_thread_idx(): ...


@builtin("block.mem_fence")
def _block_mem_fence():
    """Order this thread's memory accesses as seen by the threads of its block."""


@builtin("block.mem_sync")
def _block_mem_sync():
    """Deprecated alias of block.mem_fence()."""


@builtin("grid.mem_fence")
def _grid_mem_fence():
    """Order this thread's memory accesses as seen by every thread of the launch."""


@builtin("grid.memfence")
def _grid_memfence():
    """Deprecated alias of grid.mem_fence()."""


block = SimpleNamespace(thread_idx=_thread_idx, global_thread_idx=_global_thread_idx,
                        mem_fence=_block_mem_fence, mem_sync=_block_mem_sync)
grid = SimpleNamespace(mem_fence=_grid_mem_fence, memfence=_grid_memfence)
