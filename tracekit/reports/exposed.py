from .base import Param, Report

REPORT = Report("exposed", "exposed communication split by rank, step, collective, group or size bucket",
                (Param("by", "collective", ("rank", "step", "collective", "group", "size_bucket"),
                       "the dimension to split exposed communication by"),))
