"""Sources of a Graph: each folder turns something a user has into the same typed Graph.

- ``trace/``: a live model and its inputs, one forward pass recorded;
- ``fx/``: a ``torch.fx.GraphModule``, and the FX reader that ``export/`` shares;
- ``export/``: a ``torch.export.ExportedProgram``, or a ``.pt2`` file saved from one.

The source contract. Everything downstream (views, folding, layout, costs, diff, the app) reads only the
Graph, so a source fills in:

- ``Graph.validate()`` passes (``model/checks.py`` verifies it, and ``Trace`` runs it on any graph it is
  given): node and call ids unique, every parent and edge endpoint names a node or call that exists, call
  parents form a tree with no cycle, each call's ``depth`` is the length of its parent chain, node kinds are
  ``input``/``output``/``op``/``constant``/``parameter``.
- Nodes in topological order (an op after the nodes it reads), numbered ``node_id_for(i)``; module calls in
  call order, ``call_id_for(qualname, k)`` for the ``k``-th call of a module, the root's qualname ``""``. A
  node's ``parent`` is its innermost call; inputs and outputs are at the top (``None``).
- A parameter or buffer gets one ``parameter`` node (named by its qualname) in each innermost call that
  reads it, never one shared by two calls; an op lists the parameters it reads in ``params``. A tensor from
  nowhere (a lifted constant) is a ``constant`` node, likewise per call.
- Edges name the tensor they carry (``n:i/k``: the ``k``-th output of node ``i``), so a tensor used twice
  merges; ``dst_arg`` is the argument position. Every edge has its TensorMeta: sizes as integers (an
  example's sizes when some are symbolic, with ``dims`` holding their names, e.g. ``s0``), or
  ``unknown_meta()`` when the source recorded none.
- FLOPs come from one meter (``trace/cost.py``: torch's own formulas), and ``measured`` says which costs the
  nodes carry. What a source cannot give (no shapes, no module structure) is a sentence in ``notes``, which
  every view shows.
- The same input gives the same Graph, byte for byte (no ``id()``, no addresses, no dict-order accidents).

The checks cover the first point; the others are what the tests of each source check against the live
tracer (``tests/frontends/test_export_matches_live.py``).
"""
