from .staged import Stage, StagedTrainingMixin

__all__ = ["Stage", "StagedTrainingMixin"]
