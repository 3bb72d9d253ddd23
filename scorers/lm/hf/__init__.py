"""The transformers backend of the evaluation-LM protocol (``hf/<model>`` and ``embedded``).

- :mod:`~scorers.lm.hf.model`: :class:`HFEvaluationLM`, the protocol (scoring and generation),
  its settings in :class:`~scorers.lm.hf.options.HFOptions`;
- scoring: :mod:`~scorers.lm.hf.prefix_tree` (shared prefixes computed once),
  :mod:`~scorers.lm.hf.budget` (token-budget batches), :mod:`~scorers.lm.hf.forwards` (what a
  forward does) in two layouts, :mod:`~scorers.lm.hf.padded` (transformers' decoder) and
  :mod:`~scorers.lm.hf.packed` (no padding: :mod:`~scorers.lm.hf.packed_decoder`,
  :mod:`~scorers.lm.hf.packed_attention`), :mod:`~scorers.lm.hf.projection` (the output head
  at target positions);
- generation: :mod:`~scorers.lm.hf.decoding` (the batched loop), :mod:`~scorers.lm.hf.kv_cache`
  (its preallocated cache), :mod:`~scorers.lm.hf.attention` (grouped-query attention under a
  mask);
- :mod:`~scorers.lm.hf.cache_argument` (the KV-cache argument by the installed transformers'
  name), :mod:`~scorers.lm.hf.transfer` (host-to-device copies).
"""

from scorers.lm.hf.model import HFEvaluationLM
from scorers.lm.hf.options import HFOptions

__all__ = ["HFEvaluationLM", "HFOptions"]
