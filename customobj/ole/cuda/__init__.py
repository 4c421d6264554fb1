"""customobj.ole.cuda: the OLE grower's GPU backend (``TreeBooster(device="cuda")``), in numba.cuda.

One component per concern, each a host module beside its kernel module (``X.py`` launches what
``_X_kernels.py`` holds): :mod:`.backend` (``CUDABackend``, the grower's seam), :mod:`.tree` (the tree on the
card behind it: its leaf table and planned reads), :mod:`.inputs` (a
tree's gradients and couplings on their grid), :mod:`.histograms`, :mod:`.partitions`,
:mod:`.search`, :mod:`.choice` (``ole_fast``'s features), :mod:`.pruning`, :mod:`.scores`, and what
they share: :mod:`.memory`, :mod:`.pool`, :mod:`.stats`, :mod:`._launch`, :mod:`._reduce_kernels`
and :mod:`._split_kernels`. Nothing here is imported until a fit asks for ``device="cuda"``.

A component is made with the fit's :class:`~.memory.DeviceMemory` first (its allocator and
counter: every array it keeps is counted there) and its kernel modules, which the backend passes
counted (:class:`~.stats.CountedKernels`: the launch budget of ``TreeBooster.device_stats_``).
"""
