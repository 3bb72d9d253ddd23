from gem_tasks.tasks.summeval.summeval import summeval

__all__ = ["summeval"]
