from gem_tasks.tasks.space.space import space

__all__ = ["space"]
