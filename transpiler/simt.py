"""``qd.simt``: thread indexing. (Block, subgroup and grid collectives arrive with their nodes.)"""
from types import SimpleNamespace

from .lang import builtin


@builtin("block.thread_idx")
def _thread_idx(): ...


@builtin("block.global_thread_idx")
def _global_thread_idx(): ...


block = SimpleNamespace(thread_idx=_thread_idx, global_thread_idx=_global_thread_idx)
