from gem_tasks.tasks.review_quality.review_quality import review_quality

__all__ = ["review_quality"]
