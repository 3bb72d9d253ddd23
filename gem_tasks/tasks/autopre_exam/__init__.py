from gem_tasks.tasks.autopre_exam.autopre_exam import autopre_exam, qualification_from_log

__all__ = ["autopre_exam", "qualification_from_log"]
