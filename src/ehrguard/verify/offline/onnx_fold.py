"""The MiniLM model, rewritten once so that onnxruntime opens it in a quarter of the memory: the same vectors, bit for bit.

The model file keeps its weights as int8 with float scales: every weight is ``Mul(Cast(int8), scale)``.
Opening it, onnxruntime folds each such constant into a float copy, holding several copies of
every matrix on the way (the session's peak was 260 MB; ~215 MB of it transient) and a 47 MB
float copy of the word-embedding table, of which a sentence reads a few rows. This module writes,
once, a copy of the model in the cache folder where:

- each weight matrix is the float product itself (computed as onnxruntime computes it: one float
  multiplication per weight, so the same bits), stored in a side file that onnxruntime maps from
  disk instead of copying;
- an embedding table with one scale per row is looked up first and dequantized after:
  ``Gather(Mul(Cast(W), s), ids)`` becomes ``Mul(Cast(Gather(W, ids)), Gather(s, ids))``, which is the
  same rows times the same scales; the table stays int8.

The ONNX protobuf is read and written through a few hand-declared messages (nodes, their
attributes, the initializers' names, shapes and bytes); every other field rides along untouched
as an unknown field, so the onnx package is not needed. A model that does not have exactly this
shape is used as it is. ``tests/verify/test_embedding.py`` checks that the rewritten model gives
the original's vectors bit for bit.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

VERSION = 1  # of the rewrite: part of the rewritten files' names
_FLOAT, _INT8 = 1, 3  # ONNX TensorProto data types
_EXTERNAL = 1  # TensorProto.DataLocation
_ALIGN = 4096


@cache
def _messages() -> dict[str, Any]:
    """The message classes, by name: ONNX's ModelProto reduced to what the rewrite reads (field numbers as in onnx.proto)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="ehrguard_onnx_fold.proto", package="ehrguard_onnx_fold", syntax="proto2")
    one, many = f.LABEL_OPTIONAL, f.LABEL_REPEATED

    def message(name: str, *fields: tuple[str, int, int, int]) -> None:
        m = proto.message_type.add(name=name)
        for field_name, number, label, kind in fields:
            field = m.field.add(name=field_name, number=number, label=label, type=kind)
            if kind == f.TYPE_MESSAGE:
                field.type_name = f".ehrguard_onnx_fold.{_MESSAGE_OF[field_name]}"

    message("Entry", ("key", 1, one, f.TYPE_STRING), ("value", 2, one, f.TYPE_STRING))
    message("Attribute", ("name", 1, one, f.TYPE_STRING), ("i", 3, one, f.TYPE_INT64), ("g", 6, one, f.TYPE_BYTES),
            ("graphs", 11, many, f.TYPE_BYTES))
    message("Node", ("input", 1, many, f.TYPE_STRING), ("output", 2, many, f.TYPE_STRING), ("name", 3, one, f.TYPE_STRING),
            ("op_type", 4, one, f.TYPE_STRING), ("attribute", 5, many, f.TYPE_MESSAGE), ("domain", 7, one, f.TYPE_STRING))
    message("Tensor", ("dims", 1, many, f.TYPE_INT64), ("data_type", 2, one, f.TYPE_INT32), ("name", 8, one, f.TYPE_STRING),
            ("raw_data", 9, one, f.TYPE_BYTES), ("external_data", 13, many, f.TYPE_MESSAGE),
            ("data_location", 14, one, f.TYPE_INT32))
    message("ValueInfo", ("name", 1, one, f.TYPE_STRING))
    message("Graph", ("node", 1, many, f.TYPE_MESSAGE), ("initializer", 5, many, f.TYPE_MESSAGE), ("input", 11, many, f.TYPE_MESSAGE),
            ("output", 12, many, f.TYPE_MESSAGE))
    message("Model", ("graph", 7, one, f.TYPE_MESSAGE))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {m.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ehrguard_onnx_fold.{m.name}"))
            for m in proto.message_type}


_MESSAGE_OF = {"attribute": "Attribute", "node": "Node", "initializer": "Tensor", "external_data": "Entry", "graph": "Graph",
               "input": "ValueInfo", "output": "ValueInfo"}
_NUMPY = {_FLOAT: np.float32, _INT8: np.int8}


def _array(t: Any) -> np.ndarray | None:
    """An initializer's values, when they are inline raw bytes of a type the rewrite reads."""
    if t.data_type not in _NUMPY or not t.HasField("raw_data"):
        return None
    return np.frombuffer(t.raw_data, dtype=_NUMPY[t.data_type]).reshape(tuple(t.dims))


def fold(data: bytes, data_file: str) -> tuple[bytes, list[tuple[int, bytes]]] | None:
    """The rewritten model and the side file's contents (offset, bytes) it refers to as ``data_file``; None when the
    model has nothing to rewrite (or a shape the rewrite does not handle)."""
    messages = _messages()
    Node, Tensor = messages["Node"], messages["Tensor"]
    model = messages["Model"].FromString(data)
    graph = model.graph
    if any(a.HasField("g") or len(a.graphs) for n in graph.node for a in n.attribute):
        return None  # a control-flow subgraph may use any initializer: left as it is
    if any(t.data_location == _EXTERNAL for t in graph.initializer):
        return None  # weights in files of its own, found relative to the original: left as it is
    inputs = {v.name for v in graph.input}  # an initializer listed as an input (older models) can be fed another value
    tensors = {t.name: t for t in graph.initializer if t.name not in inputs}
    producer = {out: n for n in graph.node for out in n.output}
    uses = Counter([i for n in graph.node for i in n.input] + [v.name for v in graph.output])

    def dequantized(name: str) -> tuple[Any, Any, np.ndarray, np.ndarray] | None:
        """``(Mul, Cast, int8 values, scales)`` when ``name`` is the output of ``Mul(Cast(int8 initializer), initializer)``
        and nothing else reads the two."""
        mul = producer.get(name)
        if mul is None or mul.op_type != "Mul" or mul.domain or len(mul.input) != 2:
            return None
        cast = producer.get(mul.input[0])
        if (cast is None or cast.op_type != "Cast" or cast.domain or len(cast.input) != 1 or uses[mul.output[0]] != 1
                or uses[cast.output[0]] != 1):
            return None
        table, scale = tensors.get(cast.input[0]), tensors.get(mul.input[1])
        q = _array(table) if table is not None and table.data_type == _INT8 else None
        s = _array(scale) if scale is not None and scale.data_type == _FLOAT else None
        if q is None or s is None or q.ndim != 2:
            return None
        return mul, cast, q, s

    gone: set[int] = set()
    replaced: dict[int, list[Any]] = {}
    folded: list[Any] = []
    side: list[tuple[int, bytes]] = []
    offset = 0
    for node in graph.node:
        if node.domain:
            continue
        if len(node.input) != 2 or len(node.output) != 1:
            continue
        if node.op_type == "MatMul" and (found := dequantized(node.input[1])) is not None:
            mul, cast, q, s = found
            try:
                weights = (q.astype(np.float32) * s).astype(np.float32)  # what folding Mul(Cast(q), s) computes
            except ValueError:  # scales that do not broadcast: not this shape
                continue
            raw = weights.tobytes()
            folded.append(Tensor(name=mul.output[0], dims=list(weights.shape), data_type=_FLOAT, data_location=_EXTERNAL,
                                 external_data=[{"key": "location", "value": data_file}, {"key": "offset", "value": str(offset)},
                                                {"key": "length", "value": str(len(raw))}]))
            side.append((offset, raw))
            offset += -(-len(raw) // _ALIGN) * _ALIGN
            gone |= {id(mul), id(cast)}
        elif (node.op_type == "Gather" and not any(a.name == "axis" and a.i != 0 for a in node.attribute)
              and (found := dequantized(node.input[0])) is not None):
            mul, cast, q, s = found
            if s.shape != (q.shape[0], 1):
                continue  # not one scale per row
            out = node.output[0]
            replaced[id(node)] = [
                Node(input=[cast.input[0], node.input[1]], output=[out + "/rows_int8"], name=node.name + "/rows_int8",
                     op_type="Gather", attribute=node.attribute),
                Node(input=[out + "/rows_int8"], output=[out + "/rows_float"], name=node.name + "/rows_float", op_type="Cast",
                     attribute=cast.attribute),
                Node(input=[mul.input[1], node.input[1]], output=[out + "/row_scales"], name=node.name + "/row_scales",
                     op_type="Gather", attribute=node.attribute),
                Node(input=[out + "/rows_float", out + "/row_scales"], output=[out], name=node.name + "/rows", op_type="Mul"),
            ]
            gone |= {id(mul), id(cast)}
    if not gone:
        return None
    nodes = [new for n in graph.node if id(n) not in gone for new in replaced.get(id(n), [n])]
    del graph.node[:]
    graph.node.extend(nodes)
    read = {i for n in graph.node for i in n.input} | {v.name for v in graph.output}
    kept = [t for t in graph.initializer if t.name in read]  # the int8 matrices now folded are read by nothing
    del graph.initializer[:]
    graph.initializer.extend(kept + folded)
    return bytes(model.SerializeToString()), side


def _write_atomically(target: Path, chunks: list[tuple[int, bytes]]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for offset, raw in chunks:
                fh.seek(offset)
                fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())  # the rename below must never expose a file whose bytes are not on disk
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def folded_model(source: Path, cache_dir: Path) -> Path:
    """The rewritten copy of ``source`` in ``cache_dir`` (written on first use), or ``source`` itself when it has nothing
    to rewrite, or the copy cannot be made or written.

    Each installed copy of the model (told apart by size and modification time) has its own rewritten copy: one
    install never removes another's. Writes are atomic and two processes writing at once write the same bytes.
    """
    st = source.stat()
    stem = f"{source.stem}-folded{VERSION}-{st.st_size}-{st.st_mtime_ns}"
    target, data_file = cache_dir / f"{stem}.onnx", cache_dir / f"{stem}.weights"
    if target.is_file() and data_file.is_file():
        return target
    try:
        rewritten = fold(source.read_bytes(), data_file.name)
    except Exception:  # noqa: BLE001 - an optional rewrite (protobuf missing or too old, a model it misreads): the original
        return source
    if rewritten is None:
        return source
    model, side = rewritten
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        for leftover in cache_dir.glob(f".{source.stem}-folded*"):  # a write cut short (the process was killed)
            if time.time() - leftover.stat().st_mtime > 600:
                leftover.unlink(missing_ok=True)
        _write_atomically(data_file, side)  # first: a model file always finds its weights
        _write_atomically(target, [(0, model)])
    except OSError:  # a read-only cache: the original model
        return source
    return target
