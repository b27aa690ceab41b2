"""Reports built only from saved records: an HTML page and PNG figures."""

from mmjudge.report.build import build_report

__all__ = ["build_report"]
