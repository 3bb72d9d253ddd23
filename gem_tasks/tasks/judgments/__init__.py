from gem_tasks.tasks.judgments.judgments import judgment_dataset, judgments

__all__ = ["judgment_dataset", "judgments"]
