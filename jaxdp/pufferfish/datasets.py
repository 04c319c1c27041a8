"""Offline loaders for the UCI data shipped in ``jaxdp/data/uci`` (CC BY 4.0, see its README).

Each loader returns a ``dict`` column name -> numpy array (float for numeric columns, str
otherwise); rows with a missing value (``?``) in a column the caller asks for are dropped by
:func:`conditional_laws`. The decompressed bytes are checked against the SHA-256 of the UCI
originals. No network access.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
from importlib import resources

import numpy as np

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
                 "native-country", "income"]
HEART_COLUMNS = ["age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach", "exang", "oldpeak",
                 "slope", "ca", "thal", "num"]


def _read(relpath: str) -> str:
    root = resources.files("jaxdp.data").joinpath("uci")
    raw = gzip.decompress(root.joinpath(relpath + ".gz").read_bytes())
    sums = dict(reversed(line.split()) for line in root.joinpath("SHA256SUMS.original").read_text().splitlines()
                if line.strip())
    if hashlib.sha256(raw).hexdigest() != sums[relpath]:
        raise OSError(f"checksum mismatch for shipped data file {relpath}")
    return raw.decode("utf-8")


def _columns(rows, names):
    out = {}
    for k, name in enumerate(names):
        col = [r[k].strip() for r in rows]
        try:
            out[name] = np.array([np.nan if v == "?" else float(v) for v in col])
        except ValueError:
            out[name] = np.array(col)
    return out


def load_adult():
    """Adult (Census Income), adult.data: 32,561 rows, 15 columns (``ADULT_COLUMNS``)."""
    rows = [line.split(", ") for line in _read("adult/adult.data").splitlines() if line.strip()]
    return _columns(rows, ADULT_COLUMNS)


def load_heart_disease():
    """Heart Disease, processed.cleveland.data: 303 rows, 14 columns (``HEART_COLUMNS``); sex 1 = male."""
    rows = [line.split(",") for line in _read("heart-disease/processed.cleveland.data").splitlines() if line.strip()]
    return _columns(rows, HEART_COLUMNS)


def load_student(subject: str = "por"):
    """Student Performance, ``student-por.csv`` (649 rows) or ``student-mat.csv`` (395 rows), 33 columns."""
    if subject not in ("por", "mat"):
        raise ValueError(f"subject must be one of ['mat', 'por'], got {subject!r}")
    rd = list(csv.reader(io.StringIO(_read(f"student-performance/student-{subject}.csv")), delimiter=";"))
    return _columns(rd[1:], rd[0])


LOADERS = {"adult": load_adult, "heart": load_heart_disease, "student": load_student}


def conditional_laws(data, secret, value_i, value_j, query):
    """Empirical laws of ``query`` given ``secret == value_i`` and ``== value_j``, as
    ``(atoms_i, weights_i, atoms_j, weights_j)`` over distinct values (weights = frequencies)."""
    s, q = data[secret], data[query]
    ok = ~np.isnan(q) if q.dtype.kind == "f" else np.ones(len(q), bool)

    def law(v):
        sel = ok & (s == v)
        if not np.any(sel):
            raise ValueError(f"no rows with {secret} == {v!r}")
        vals, cnt = np.unique(q[sel], return_counts=True)
        return vals.astype(float), cnt / cnt.sum()

    return (*law(value_i), *law(value_j))


__all__ = ["load_adult", "load_heart_disease", "load_student", "conditional_laws", "LOADERS",
           "ADULT_COLUMNS", "HEART_COLUMNS"]
