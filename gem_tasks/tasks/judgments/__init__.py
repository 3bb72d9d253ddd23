from gem_tasks.tasks.judgments.judgments import given_answer, judgment_dataset, judgments

__all__ = ["given_answer", "judgment_dataset", "judgments"]
