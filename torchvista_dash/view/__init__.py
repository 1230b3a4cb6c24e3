"""Graph + expand state → VisibleGraph: what one view draws, with repeated siblings folded and grouped inputs
and outputs."""
