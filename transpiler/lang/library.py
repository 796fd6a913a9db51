"""The parts of ``qd.simt`` written in the kernel language itself: the block and subgroup
collectives (blocklib, subgrouplib) and the register tiles (tile). They are written against
``lang.qd``, which holds ``qd.simt``, so simt cannot import them: the package sets them into
simt's namespaces here, once both are loaded."""
from . import blocklib, simt, subgrouplib, tile


def install() -> None:
    """``qd.simt.block.<collective>``, ``qd.simt.subgroup.<collective>`` and
    ``qd.simt.Tile16x16`` / ``Tile32x32``."""
    for name in blocklib.__all__:
        setattr(simt.block, name, getattr(blocklib, name))
    for name in subgrouplib.__all__:
        setattr(simt.subgroup, name, getattr(subgrouplib, name))
    simt.Tile16x16, simt.Tile32x32 = tile.Tile16x16, tile.Tile32x32
