"""Hand-built ``Graph`` fixtures for view/layout tests (colleagues may import them read-only).

Each builder returns a graph whose visible counts are easy to check by hand; the docstrings give them.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchvista_dash.model.graph import (
    Edge,
    ErrorInfo,
    Graph,
    ModuleCall,
    Node,
    ParamInfo,
    TensorMeta,
    call_id_for,
    node_id_for,
)


def meta(shape: Sequence[int], dtype: str = "float32") -> TensorMeta:
    n = 1
    for s in shape:
        n *= s
    return TensorMeta(tuple(shape), dtype, "cpu", 4 * n)


class GraphBuilder:
    """Records calls, nodes and edges in the order a forward pass would produce them."""

    def __init__(self, root_cls: str = "Net", model_name: str | None = None) -> None:
        self.calls: list[ModuleCall] = []
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.model_name = model_name or root_cls
        self._count: dict[str, int] = {}
        self._depth: dict[str, int] = {}
        self.root = self.call("", root_cls, None)

    def call(
        self,
        qualname: str,
        cls: str,
        parent: str | None,
        *,
        builtin: bool = False,
        params: Sequence[tuple[str, tuple[int, ...]]] = (),
        extra_repr: str = "",
    ) -> str:
        k = self._count.get(qualname, 0)
        self._count[qualname] = k + 1
        cid = call_id_for(qualname, k)
        depth = 0 if parent is None else self._depth[parent] + 1
        self._depth[cid] = depth
        infos = tuple(ParamInfo(name, shape, "float32", True) for name, shape in params)
        num = sum(meta(s).nbytes // 4 for _, s in params)
        self.calls.append(
            ModuleCall(
                cid,
                qualname,
                cls,
                parent,
                call_index=k,
                num_params=num,
                params=infos,
                extra_repr=extra_repr,
                depth=depth,
                builtin=builtin,
            )
        )
        return cid

    def _node(
        self, kind: str, name: str, parent: str | None, inputs: Sequence[str], shape: Sequence[int] | None
    ) -> str:
        nid = node_id_for(len(self.nodes))
        outputs = () if shape is None else (meta(shape),)
        self.nodes.append(Node(nid, kind, name, parent, outputs=outputs))
        for i, src in enumerate(inputs):
            src_node = self.nodes[int(src.split(":")[1])]
            self.edges.append(Edge(src, nid, f"{src}/0", src_node.outputs[0], dst_arg=i))
        return nid

    def input(self, name: str, shape: Sequence[int]) -> str:
        return self._node("input", name, None, (), shape)

    def op(self, name: str, parent: str, inputs: Sequence[str], shape: Sequence[int]) -> str:
        return self._node("op", name, parent, inputs, shape)

    def param(self, name: str, parent: str, shape: Sequence[int]) -> str:
        return self._node("parameter", name, parent, (), shape)

    def output(self, src: str) -> str:
        return self._node("output", "output", None, (src,), None)

    def linear(self, qualname: str, parent: str, x: str, d_in: int, d_out: int, batch: int = 2) -> str:
        """A built-in nn.Linear call with its weight, bias and `linear` op inside; returns the op's node."""
        cid = self.call(
            qualname,
            "Linear",
            parent,
            builtin=True,
            params=(("weight", (d_out, d_in)), ("bias", (d_out,))),
            extra_repr=f"in_features={d_in}, out_features={d_out}, bias=True",
        )
        w = self.param(f"{qualname}.weight", cid, (d_out, d_in))
        b = self.param(f"{qualname}.bias", cid, (d_out,))
        return self.op("linear", cid, (x, w, b), (batch, d_out))

    def build(self, failing: str | None = None) -> Graph:
        nodes = list(self.nodes)
        calls = list(self.calls)
        error = None
        if failing is not None:
            i = int(failing.split(":")[1])
            old = nodes[i]
            nodes[i] = Node(old.id, old.kind, old.name, old.parent, error="shape mismatch", outputs=())
            chain: set[str] = set()
            cur = old.parent
            by_id = {c.id: c for c in calls}
            while cur is not None:
                chain.add(cur)
                cur = by_id[cur].parent
            calls = [ModuleCall(**{**c.__dict__, "failed": True}) if c.id in chain else c for c in calls]
            error = ErrorInfo("RuntimeError", "shape mismatch", "Traceback ...", node=failing)
        g = Graph(tuple(nodes), tuple(self.edges), tuple(calls), model_name=self.model_name, error=error)
        g.validate()
        return g


def block(b: GraphBuilder, qualname: str, parent: str, x: str, d: int, act: str = "gelu") -> str:
    """A user ``Block``: fc (built-in Linear: 2 params + linear), an activation, a residual add (3 ops, 2
    params)."""
    cid = b.call(qualname, "Block", parent, extra_repr="")
    h = b.linear(f"{qualname}.fc", cid, x, d, d)
    h = b.op(act, cid, (h,), (2, d))
    return b.op("__add__", cid, (x, h), (2, d))


def stack_graph(n_layers: int = 12, odd_layer: int | None = None, d: int = 8) -> Graph:
    """input → embed (Linear) → layers.0 … layers.{n-1} (Block) → norm (LayerNorm, 1 op) → output.

    Default view (depth=1, folded): input, embed, "Block ×n", norm, output = 5 boxes, 4 edges, 1 cluster
    (root). ``odd_layer``: that layer uses relu instead of gelu, which breaks the run of identical blocks.
    """
    b = GraphBuilder("Stack")
    x = b.input("x", (2, d))
    h = b.linear("embed", b.root, x, d, d)
    for i in range(n_layers):
        h = block(b, f"layers.{i}", b.root, h, d, act="relu" if i == odd_layer else "gelu")
    norm = b.call(
        "norm",
        "LayerNorm",
        b.root,
        builtin=True,
        params=(("weight", (d,)), ("bias", (d,))),
        extra_repr=f"({d},), eps=1e-05",
    )
    h = b.op("layer_norm", norm, (h,), (2, d))
    b.output(h)
    return b.build()


def nested_graph(outer: int = 3, inner: int = 4, d: int = 4) -> Graph:
    """stages.i (Stage) each holding blocks.j (Block): repeats inside repeats.

    Default view: input, "Stage ×outer", output. Unfolding the stages and expanding one shows "Block ×inner".
    """
    b = GraphBuilder("Nested")
    h = b.input("x", (2, d))
    for i in range(outer):
        stage = b.call(f"stages.{i}", "Stage", b.root)
        for j in range(inner):
            h = block(b, f"stages.{i}.blocks.{j}", stage, h, d)
    b.output(h)
    return b.build()


def failed_graph() -> Graph:
    """Like ``stack_graph(3)`` but the gelu of layers.1 raised: the trace stops there."""
    b = GraphBuilder("Broken")
    d = 8
    x = b.input("x", (2, d))
    h = b.linear("embed", b.root, x, d, d)
    h = block(b, "layers.0", b.root, h, d)
    cid = b.call("layers.1", "Block", b.root)
    h1 = b.linear("layers.1.fc", cid, h, d, d)
    bad = b.op("gelu", cid, (h1,), (2, d))
    return b.build(failing=bad)


def twice_graph() -> Graph:
    """A shared ``proj`` Linear called twice (calls mod:proj and mod:proj#1) around a relu."""
    b = GraphBuilder("Twice")
    x = b.input("x", (2, 4))
    h = b.linear("proj", b.root, x, 4, 4)
    h = b.op("relu", b.root, (h,), (2, 4))
    h = b.linear("proj", b.root, h, 4, 4)
    b.output(h)
    return b.build()


def parallel_graph() -> Graph:
    """Three identical heads reading the same input, concatenated: parallel, so never folded."""
    b = GraphBuilder("Heads")
    x = b.input("x", (2, 4))
    outs = [b.linear(f"heads.{i}", b.root, x, 4, 4) for i in range(3)]
    h = b.op("cat", b.root, outs, (2, 12))
    b.output(h)
    return b.build()
