"""torch.export → Graph: an ``ExportedProgram`` (``program.py``) or a saved ``.pt2`` file (``load.py``).

How a program's drawing differs from a live trace of the same model, and why (what a program holds):
- a module call that runs no op (``nn.Identity``, a wrapper that returns its input) leaves nothing in the
  program, so it has no box (a live trace draws an ``identity`` box for it);
- ops are aten ops by their short names (``add`` where a live trace says ``__add__``; after
  ``run_decompositions()`` the core aten set: ``addmm`` for ``linear``), the full target in the details;
- a program records no ``extra_repr`` or module attributes, so a module's details list its class,
  parameters and buffers only;
- code that looks at values takes the path that works for any value: Hugging Face models always build their
  attention mask in a program, while a live run without padding skips it;
- torch.export cannot return transformers' ``DynamicCache`` (not a registered pytree type), so Hugging Face
  models are exported with ``use_cache=False``; and a saved program whose inputs or outputs are a library's
  types (transformers' model outputs) reads only once that library's module is imported.
"""

from __future__ import annotations

from torchvista_dash.frontends.export.program import graph_of_program

__all__ = ["graph_of_program"]
