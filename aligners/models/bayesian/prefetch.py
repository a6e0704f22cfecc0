"""A software prefetch for numba kernels: `prefetch(arr, i)` hints the CPU to bring the cache
line of arr[i] in (LLVM's `llvm.prefetch`: read, high locality, data cache). A hint only: it
never faults (no load happens; an index past the end is harmless) and changes no value.
Cost O(1), no memory.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch"]


@intrinsic
def prefetch(typingctx, arr, idx):
    """prefetch(arr (n,), i) -> None: hint that arr[i] will be read soon. Cost O(1)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty, _ = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        # rw = 0 (read), locality = 3 (keep in all cache levels), cache type = 1 (data)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
