"""``qd.linalg``'s sparse matrices, as Quadrants has them: a ``SparseMatrixBuilder`` that
kernels fill with ``A[i, j] += v``, the ``SparseMatrix`` it builds (sums, products, transpose,
``A @ x``), and the ``SparseSolver`` / ``SparseCG`` that solve ``A x = b``.

In a kernel a builder is three ndarrays and a counter (a dataclass parameter, so every target
takes it as four buffers): ``A[i, j] += v`` claims the next slot with one atomic add and writes
the triplet there; duplicates add up when the matrix is built, as Eigen's and cuSPARSE's
builders have it. On the host a matrix is CSR in NumPy; the direct solver factors it with
SciPy's sparse LU (SuperLU), imported when a solver is made."""

from ..ir.types import python_type
from . import host, qd
from .field import Field
from .sparse_builder import builder_annotation

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os

    import numpy as np
    from numpy.typing import ArrayLike

    from ..ir.types import DType
    from .tensor_type import Tensor

__all__ = ["SparseMatrix", "SparseMatrixBuilder", "SparseSolver", "SparseCG", "builder_annotation",
           "sparse_matrix_builder"]


sparse_matrix_builder = builder_annotation  # Quadrants' older spelling, in qd.linalg


def _dtype(dtype: "DType | type"):
    t = python_type(dtype) or dtype
    if t.name not in ("f32", "f64"):
        raise TypeError(f"a sparse matrix holds f32 or f64 values, not {t.name}")
    return t


def _check_format(storage_format: str) -> None:
    if storage_format not in ("col_major", "row_major"):
        raise ValueError(f"storage_format must be 'col_major' or 'row_major', not {storage_format!r}")


class SparseMatrixBuilder:
    """``qd.linalg.SparseMatrixBuilder(num_rows, num_cols, max_num_triplets, dtype=qd.f32)``:
    room for ``max_num_triplets`` entries that kernels add with ``A[i, j] += v``; ``build()``
    makes the matrix, summing the entries at the same place."""

    def __init__(self, num_rows: int | None = None, num_cols: int | None = None, max_num_triplets: int = 0,
                 dtype: "DType | type" = qd.f32,
                 storage_format: str = "col_major"):
        Ndarray = host.ndarray_class()

        if num_rows is None:
            raise TypeError("SparseMatrixBuilder needs num_rows")
        if max_num_triplets < 1:
            raise ValueError(f"max_num_triplets must be at least 1, got {max_num_triplets}")
        _check_format(storage_format)
        self.num_rows = num_rows
        self.num_cols = num_cols if num_cols else num_rows
        self.dtype = _dtype(dtype)
        self.storage_format = storage_format
        self.max_num_triplets = max_num_triplets
        self.rows = Ndarray(qd.i32, (max_num_triplets,))
        self.cols = Ndarray(qd.i32, (max_num_triplets,))
        self.values = Ndarray(self.dtype, (max_num_triplets,))
        self.count = Ndarray(qd.i32, (1,))

    def _triplets(self):
        n = int(self.count.to_numpy()[0])
        if n > self.max_num_triplets:
            raise RuntimeError(f"SparseMatrixBuilder: kernels added {n} entries, more than max_num_triplets="
                               f"{self.max_num_triplets}: make the builder with max_num_triplets >= {n}")
        rows, cols = self.rows.to_numpy()[:n], self.cols.to_numpy()[:n]
        bad = (rows < 0) | (rows >= self.num_rows) | (cols < 0) | (cols >= self.num_cols)
        if bad.any():
            k = int(bad.argmax())
            raise IndexError(f"SparseMatrixBuilder: entry ({rows[k]}, {cols[k]}) is outside the "
                             f"{self.num_rows} x {self.num_cols} matrix")
        return rows, cols, self.values.to_numpy()[:n]

    def build(self, dtype: "DType | type | None" = None, _format: str = "CSR") -> "SparseMatrix":
        """The matrix of the entries added so far (the builder keeps them)."""
        m = SparseMatrix(self.num_rows, self.num_cols, dtype=self.dtype, storage_format=self.storage_format)
        m._set_triplets(*self._triplets())
        return m

    def print_triplets(self) -> None:
        rows, cols, values = self._triplets()
        print(f"n={len(rows)}, m={self.max_num_triplets}")
        for r, c, v in zip(rows, cols, values, strict=True):
            print(f"({r}, {c}) val={v}")


class SparseMatrix:
    """``qd.linalg.SparseMatrix(n, m, dtype=qd.f32)``: an n x m matrix of which only the
    entries set are stored (CSR)."""

    def __init__(self, n: int | None = None, m: int | None = None, sm: "SparseMatrix | None" = None,
                 dtype: "DType | type" = qd.f32, storage_format: str = "col_major"):
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        _check_format(storage_format)
        self.dtype = _dtype(dtype)
        self.storage_format = storage_format
        if sm is not None:  # (as Quadrants: another matrix's contents)
            n, m = sm.n, sm.m
        if n is None:
            raise TypeError("SparseMatrix needs n (and m)")
        self.n, self.m = n, m if m else n
        self._indptr = np.zeros(self.n + 1, np.int64)
        self._indices = np.zeros(0, np.int64)
        self._data = np.zeros(0, self.dtype.np_dtype)
        if sm is not None:
            self._indptr, self._indices, self._data = sm._indptr.copy(), sm._indices.copy(), \
                sm._data.astype(self.dtype.np_dtype)

    # ------------------------------------------------------------------ storage

    def _set_triplets(self, rows: "ArrayLike", cols: "ArrayLike", values: "ArrayLike") -> None:
        """CSR of (rows, cols, values), entries at the same place summed, in row-major order."""
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        values = np.asarray(values, self.dtype.np_dtype)
        key = rows * self.m + cols
        order = np.argsort(key, kind="stable")
        key, values = key[order], values[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
        summed = np.add.reduceat(values, starts) if len(key) else values
        unique = key[starts] if len(key) else key
        r = unique // self.m
        self._indices = unique % self.m
        self._data = summed.astype(self.dtype.np_dtype)
        self._indptr = np.r_[0, np.cumsum(np.bincount(r, minlength=self.n))].astype(np.int64)

    def _triplets(self):
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        rows = np.repeat(np.arange(self.n), np.diff(self._indptr))
        return rows, self._indices, self._data

    def _new(self, rows: "ArrayLike", cols: "ArrayLike", values: "ArrayLike", n: int | None = None,
             m: int | None = None, dtype: "DType | None" = None) -> "SparseMatrix":
        out = SparseMatrix(n if n is not None else self.n, m if m is not None else self.m,
                           dtype=dtype or self.dtype, storage_format=self.storage_format)
        out._set_triplets(rows, cols, values)
        return out

    def _same_shape(self, other: "SparseMatrix") -> None:
        if not isinstance(other, SparseMatrix):
            raise TypeError(f"a SparseMatrix combines with another SparseMatrix, not {type(other).__name__}")
        if (self.n, self.m) != (other.n, other.m):
            raise ValueError(f"Dimension mismatch between sparse matrices ({self.n}, {self.m}) and "
                             f"({other.n}, {other.m})")

    def _result_dtype(self, other: "SparseMatrix"):
        return qd.f64 if qd.f64 in (self.dtype, other.dtype) else qd.f32

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other: "SparseMatrix") -> "SparseMatrix":
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        self._same_shape(other)
        (r1, c1, v1), (r2, c2, v2) = self._triplets(), other._triplets()
        return self._new(np.r_[r1, r2], np.r_[c1, c2], np.r_[v1, v2], dtype=self._result_dtype(other))

    def __sub__(self, other: "SparseMatrix") -> "SparseMatrix":
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        self._same_shape(other)
        (r1, c1, v1), (r2, c2, v2) = self._triplets(), other._triplets()
        return self._new(np.r_[r1, r2], np.r_[c1, c2], np.r_[v1, -v2], dtype=self._result_dtype(other))

    def __iadd__(self, other: "SparseMatrix") -> "SparseMatrix":
        total = self + other
        self._indptr, self._indices, self._data = total._indptr, total._indices, total._data.astype(
            self.dtype.np_dtype)
        return self

    def __isub__(self, other: "SparseMatrix") -> "SparseMatrix":
        diff = self - other
        self._indptr, self._indices, self._data = diff._indptr, diff._indices, diff._data.astype(self.dtype.np_dtype)
        return self

    def __mul__(self, other: object):
        """``A * 2.5``: every entry scaled; ``A * B``: the entrywise (Hadamard) product."""
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        if isinstance(other, SparseMatrix):
            self._same_shape(other)
            r1, c1, v1 = self._triplets()
            r2, c2, v2 = other._triplets()
            k1, k2 = r1 * self.m + c1, r2 * self.m + c2
            both, i1, i2 = np.intersect1d(k1, k2, assume_unique=True, return_indices=True)
            return self._new(both // self.m, both % self.m, v1[i1] * v2[i2], dtype=self._result_dtype(other))
        if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
            r, c, v = self._triplets()
            return self._new(r, c, v * other)
        return NotImplemented

    def __rmul__(self, other: object):
        return self.__mul__(other) if not isinstance(other, SparseMatrix) else NotImplemented

    def transpose(self) -> "SparseMatrix":
        r, c, v = self._triplets()
        return self._new(c, r, v, n=self.m, m=self.n)

    @property
    def T(self) -> "SparseMatrix":  # noqa: N802 - NumPy's spelling
        return self.transpose()

    def __matmul__(self, other: "SparseMatrix | Tensor | np.ndarray"):
        """``A @ B`` (a SparseMatrix), ``A @ x``: x a NumPy vector or a field (a NumPy vector
        back, as in Quadrants), or a qd.ndarray (a qd.ndarray back)."""
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        Ndarray = host.ndarray_class()

        if isinstance(other, SparseMatrix):
            if self.m != other.n:
                raise ValueError(f"Dimension mismatch between sparse matrices ({self.n}, {self.m}) and "
                                 f"({other.n}, {other.m})")
            r1, c1, v1 = self._triplets()
            lengths = np.diff(other._indptr)[c1]  # each entry a_ik meets row k of B
            starts = np.repeat(other._indptr[c1] - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
            at = np.arange(lengths.sum()) + starts
            rows = np.repeat(r1, lengths)
            values = np.repeat(v1, lengths) * other._data[at]
            return self._new(rows, other._indices[at], values, m=other.m, dtype=self._result_dtype(other))
        if isinstance(other, Ndarray):
            if other.shape[0] != self.m:
                raise ValueError(f"Dimension mismatch between sparse matrix ({self.n}, {self.m}) and vector "
                                 f"({other.shape})")
            out = Ndarray(other.dtype, (self.n,))
            out.from_numpy(self._spmv(other.to_numpy()).astype(other.dtype.np_dtype))
            return out
        if isinstance(other, Field):
            other = other.to_numpy()
        if isinstance(other, np.ndarray):
            if other.shape[0] != self.m:
                raise ValueError(f"Dimension mismatch between sparse matrix ({self.n}, {self.m}) and vector "
                                 f"({other.shape})")
            return self._spmv(other)
        raise TypeError(f"Sparse matrix-matrix/vector multiplication does not support {type(other).__name__}: "
                        f"use a SparseMatrix, a qd.field, a qd.ndarray or a NumPy array")

    def _spmv(self, x: "np.ndarray"):
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        rows, cols, values = self._triplets()
        return np.bincount(rows, weights=values * x[cols], minlength=self.n).astype(self.dtype.np_dtype)

    # ------------------------------------------------------------------ elements

    def _find(self, i: int, j: int) -> int:
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        if not (0 <= i < self.n and 0 <= j < self.m):
            raise IndexError(f"({i}, {j}) is outside the {self.n} x {self.m} sparse matrix")
        lo, hi = self._indptr[i], self._indptr[i + 1]
        k = lo + int(np.searchsorted(self._indices[lo:hi], j))
        return k if k < hi and self._indices[k] == j else -1

    def __getitem__(self, index: tuple[int, int]):
        i, j = index
        k = self._find(i, j)
        return self._data[k].item() if k >= 0 else 0.0

    def __setitem__(self, index: tuple[int, int], value: float) -> None:
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        i, j = index
        k = self._find(i, j)
        if k >= 0:
            self._data[k] = value
            return
        at = self._indptr[i] + int(np.searchsorted(self._indices[self._indptr[i]:self._indptr[i + 1]], j))
        self._indices = np.insert(self._indices, at, j)
        self._data = np.insert(self._data, at, value)
        self._indptr[i + 1:] += 1

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.m)

    def to_numpy(self) -> "np.ndarray":
        """The matrix as a dense NumPy array."""
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        out = np.zeros((self.n, self.m), self.dtype.np_dtype)
        r, c, v = self._triplets()
        out[r, c] = v
        return out

    def __str__(self) -> str:
        def text(v: float) -> str:
            return f"{v:g}"
        return "\n".join("[" + ", ".join(text(v) for v in row) + "]" for row in self.to_numpy()) + "\n"

    __repr__ = __str__

    def build_from_ndarray(self, ndarray: "Tensor") -> None:
        """The matrix of the (row, column, value) triplets a qd.ndarray holds, in order."""
        Ndarray = host.ndarray_class()

        if not isinstance(ndarray, Ndarray):
            raise TypeError("Sparse matrix only supports building from [qd.ndarray, qd.Vector.ndarray, "
                            "qd.Matrix.ndarray]")
        flat = ndarray.to_numpy().reshape(-1)
        if flat.size % 3:
            raise ValueError("The number of ndarray elements must have a length that is divisible by 3.")
        t = flat.reshape(-1, 3)
        self._set_triplets(t[:, 0].astype(int), t[:, 1].astype(int), t[:, 2])

    def mmwrite(self, filename: "str | os.PathLike[str]") -> None:
        """The matrix in Matrix Market coordinate format (1-based indices)."""
        r, c, v = self._triplets()
        with open(filename, "w") as out:
            out.write("%%MatrixMarket matrix coordinate real general\n")
            out.write(f"{self.n} {self.m} {len(v)}\n")
            for i, j, x in zip(r, c, v, strict=True):
                out.write(f"{i + 1} {j + 1} {x.item()!r}\n")


class SparseSolver:
    """``qd.linalg.SparseSolver(dtype, solver_type="LLT" | "LDLT" | "LU", ordering="AMD" |
    "COLAMD")``: ``analyze_pattern(A)``, ``factorize(A)`` (or ``compute(A)``), then
    ``solve(b)``. Every solver type factors with SciPy's sparse LU (an exact factorization of
    any nonsingular matrix, symmetric or not), with the fill-reducing ordering asked for."""

    _TYPES = ("LLT", "LDLT", "LU")
    _ORDERINGS = {"AMD": "MMD_AT_PLUS_A", "COLAMD": "COLAMD"}

    def __init__(self, dtype: "DType | type" = qd.f32, solver_type: str = "LLT", ordering: str = "AMD"):
        if solver_type not in self._TYPES or ordering not in self._ORDERINGS:
            raise ValueError(f"The solver type {solver_type} with {ordering} is not supported for now. Only "
                             f"{list(self._TYPES)} with {list(self._ORDERINGS)} are supported.")
        try:
            import scipy.sparse.linalg  # noqa: F401, PLC0415 - SciPy only when a solver is made
        except ImportError:
            raise ImportError("qd.linalg.SparseSolver factors with SciPy: pip install scipy (or solve with "
                              "qd.linalg.SparseCG, which needs nothing more)") from None
        self.dtype = _dtype(dtype)
        self.solver_type, self.ordering = solver_type, ordering
        self.matrix = None
        self._lu = None
        self._ok = False

    def _scipy(self, a: SparseMatrix):
        import scipy.sparse  # noqa: PLC0415 - SciPy only when a solver is made

        return scipy.sparse.csc_matrix(scipy.sparse.csr_matrix((a._data.astype(self.dtype.np_dtype), a._indices,
                                                                a._indptr), shape=a.shape))

    def analyze_pattern(self, sparse_matrix: SparseMatrix) -> None:
        self._check(sparse_matrix)
        if sparse_matrix.dtype != self.dtype:
            raise TypeError(f"The SparseSolver's dtype {self.dtype.name} is not consistent with the SparseMatrix's "
                            f"dtype {sparse_matrix.dtype.name}.")
        self.matrix = sparse_matrix

    def factorize(self, sparse_matrix: SparseMatrix) -> None:
        import scipy.sparse.linalg  # noqa: PLC0415 - SciPy only when a solver is made

        self._check(sparse_matrix)
        self.matrix = sparse_matrix
        try:
            self._lu = scipy.sparse.linalg.splu(self._scipy(sparse_matrix), permc_spec=self._ORDERINGS[self.ordering])
            self._ok = True
        except RuntimeError:  # exactly singular
            self._lu, self._ok = None, False

    def compute(self, sparse_matrix: SparseMatrix) -> None:
        self.analyze_pattern(sparse_matrix)
        self.factorize(sparse_matrix)

    def solve(self, b: "Tensor | ArrayLike") -> "Tensor | np.ndarray":
        """x with A x = b: a NumPy vector for a NumPy vector or a field, a qd.ndarray for one."""
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        Ndarray = host.ndarray_class()

        if self.matrix is None:
            raise RuntimeError("Please call compute() before calling solve().")
        as_ndarray = isinstance(b, Ndarray)
        rhs = b.to_numpy() if isinstance(b, (Field, Ndarray)) else np.asarray(b)
        if self._lu is None:
            self._ok = False
            x = np.full(self.matrix.m, np.nan, self.dtype.np_dtype)
        else:
            x = self._lu.solve(rhs.astype(self.dtype.np_dtype))
            self._ok = bool(np.isfinite(x).all())
        if as_ndarray:
            out = Ndarray(b.dtype, (self.matrix.m,))
            out.from_numpy(x.astype(b.dtype.np_dtype))
            return out
        return x

    def info(self) -> bool:
        """Whether the last factorization and solve succeeded."""
        return self._ok

    @staticmethod
    def _check(sparse_matrix: object) -> None:
        if not isinstance(sparse_matrix, SparseMatrix):
            raise TypeError(f"The parameter type: {type(sparse_matrix).__name__} is not supported in linear solvers "
                            f"for now.")


class SparseCG:
    """``qd.linalg.SparseCG(A, b, x0=None, max_iter=50, atol=1e-6)``: conjugate gradients for a
    symmetric positive definite ``A``; ``solve()`` gives ``(x, converged)``."""

    def __init__(self, A: SparseMatrix, b: "Tensor | ArrayLike", x0: "Tensor | ArrayLike | None" = None,
                 max_iter: int = 50, atol: float = 1e-6):
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        Ndarray = host.ndarray_class()

        self.matrix, self.dtype = A, A.dtype
        self.b = b
        self.max_iter, self.atol = max_iter, atol
        self._rhs = (b.to_numpy() if isinstance(b, Ndarray) else np.asarray(b)).astype(self.dtype.np_dtype)
        self._x0 = None if x0 is None else (x0.to_numpy() if isinstance(x0, Ndarray) else np.asarray(x0))

    def solve(self) -> "tuple[Tensor | np.ndarray, bool]":
        import numpy as np  # noqa: PLC0415 - NumPy only when a sparse matrix is used

        Ndarray = host.ndarray_class()

        t = self.dtype.np_dtype
        x = np.zeros(self.matrix.m, t) if self._x0 is None else self._x0.astype(t)
        r = self._rhs - self.matrix._spmv(x)
        p = r.copy()
        rr = float(r @ r)
        converged = np.sqrt(rr) < self.atol
        for _ in range(self.max_iter):
            if converged:
                break
            ap = self.matrix._spmv(p)
            alpha = rr / float(p @ ap)
            x = (x + alpha * p).astype(t)
            r = (r - alpha * ap).astype(t)
            rr_new = float(r @ r)
            converged = np.sqrt(rr_new) < self.atol
            p = (r + (rr_new / rr) * p).astype(t)
            rr = rr_new
        if isinstance(self.b, Ndarray):
            out = Ndarray(self.b.dtype, (self.matrix.m,))
            out.from_numpy(x.astype(self.b.dtype.np_dtype))
            return out, bool(converged)
        return x, bool(converged)
