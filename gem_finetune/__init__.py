"""A fine-tuned evaluation LM (GEM paper App. E): the training data (:mod:`.data`: per paper
six ordered conditional and three marginal prediction pairs for GEM and for GEM-S, rendered
exactly as GEM scores them) and LoRA training with the appendix's settings (:mod:`.train`).
Score with the result through any backend's ``adapter`` option
(``scorer_lm_args={"adapter": "<out>/adapter"}``).

``gem_finetune.train`` needs peft (``pip install 'gem-tasks[finetune]'``); it is imported
only when training.
"""

from gem_finetune.data import (
    FinetuneData,
    FinetuneDataError,
    build_finetune_data,
    load_finetune_data,
    save_finetune_data,
    training_pairs,
)

__all__ = [
    "FinetuneData",
    "FinetuneDataError",
    "build_finetune_data",
    "load_finetune_data",
    "save_finetune_data",
    "training_pairs",
]
