from gem_tasks.tasks.iclr.iclr import iclr

__all__ = ["iclr"]
