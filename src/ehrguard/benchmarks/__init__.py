"""Benchmarks: the dataset formats (SCARE, EHRSQL-2024), the runner that scores a method over them, and the reports.

The names below are the API (``from ehrguard.benchmarks import load_scare, run_scare``). The
modules are internal: :mod:`.scare` and :mod:`.ehrsql` read the datasets; :mod:`.scare_run`
runs a method and scores it, in a resumable run folder (:mod:`.rundir`); :mod:`.report` and
:mod:`.compare` write the reports; :mod:`.fidelity` and :mod:`.forms` are the studies behind
``ehrguard bench fidelity`` and ``bench forms``.

Every name is imported on first use (PEP 562), so ``import ehrguard.benchmarks`` costs nothing:
the runner brings in the verification layer, the forms study the offline verifier's models,
the comparison figure matplotlib. The offline verifier's template bank reads EHRSQL splits from
here, which an eager import would also turn into an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ehrguard.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from ehrguard.benchmarks.clinsql_verify import (
        calibration_in_sample,
        clinsql_verify_metrics,
        render_clinsql_verify,
        run_clinsql_verify,
        write_clinsql_verify_report,
    )
    from ehrguard.benchmarks.compare import compare_runs, load_reference, write_comparison
    from ehrguard.benchmarks.ehrsql import (
        ehrsql_decisions,
        ehrsql_pairs,
        load_ehrsql_split,
        load_predictions,
        read_predictions,
        score_decisions,
        score_ehrsql,
    )
    from ehrguard.benchmarks.error_types import LABELS, agreement, agreement_markdown, fill_error_types, item_error_type, read_labels
    from ehrguard.benchmarks.fidelity import candidate_fidelity
    from ehrguard.benchmarks.forms import combine, held_out_splits, read_held_out
    from ehrguard.benchmarks.hostile import HostileReport, duckdb_copy, render_markdown, run_hostile
    from ehrguard.benchmarks.mutations import MUTATIONS, generate_cases, split_pairs
    from ehrguard.benchmarks.offline_ask import fit_reader, out_of_fold, render_offline_ask, run_offline_ask, split_items
    from ehrguard.benchmarks.provenance import in_sample
    from ehrguard.benchmarks.report import MAIN_KEYS, MAIN_LABELS, fmt, jsonable, write_scare_report
    from ehrguard.benchmarks.rundir import RunDir, file_sha256
    from ehrguard.benchmarks.safety import (
        SafetyCase,
        category_metrics,
        load_cases,
        read_case_file,
        run_safety,
        safety_metrics,
        shipped_case_files,
        write_safety_report,
    )
    from ehrguard.benchmarks.scale import render_scale, run_scale, write_scale_report
    from ehrguard.benchmarks.scare import ScareItem, load_scare
    from ehrguard.benchmarks.scare_run import (
        RunSummary,
        method_for_run,
        record_llm_usage,
        rescore_runs,
        run_scare,
        score_records,
        select_items,
        write_run_report,
    )
    from ehrguard.benchmarks.thresholds import run_records, scare_decisions, threshold_report, write_threshold_report

_LAZY = by_module({
    ".clinsql_verify": ("calibration_in_sample", "clinsql_verify_metrics", "render_clinsql_verify", "run_clinsql_verify",
                        "write_clinsql_verify_report"),
    ".compare": ("compare_runs", "load_reference", "write_comparison"),
    ".ehrsql": ("ehrsql_decisions", "ehrsql_pairs", "load_ehrsql_split", "load_predictions", "read_predictions", "score_decisions",
                "score_ehrsql"),
    ".error_types": ("LABELS", "agreement", "agreement_markdown", "fill_error_types", "item_error_type", "read_labels"),
    ".fidelity": ("candidate_fidelity",),
    ".forms": ("combine", "held_out_splits", "read_held_out"),
    ".report": ("MAIN_KEYS", "MAIN_LABELS", "fmt", "jsonable", "write_scare_report"),
    ".rundir": ("RunDir", "file_sha256"),
    ".hostile": ("HostileReport", "duckdb_copy", "render_markdown", "run_hostile"),
    ".safety": ("SafetyCase", "category_metrics", "load_cases", "read_case_file", "run_safety", "safety_metrics", "shipped_case_files",
                "write_safety_report"),
    ".provenance": ("in_sample",),
    ".offline_ask": ("fit_reader", "out_of_fold", "render_offline_ask", "run_offline_ask", "split_items"),
    ".mutations": ("MUTATIONS", "generate_cases", "split_pairs"),
    ".scale": ("render_scale", "run_scale", "write_scale_report"),
    ".scare": ("ScareItem", "load_scare"),
    ".thresholds": ("run_records", "scare_decisions", "threshold_report", "write_threshold_report"),
    ".scare_run": ("RunSummary", "method_for_run", "record_llm_usage", "rescore_runs", "run_scare", "score_records", "select_items",
                   "write_run_report"),
})


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "LABELS",
    "fit_reader",
    "out_of_fold",
    "render_offline_ask",
    "run_offline_ask",
    "split_items",
    "render_scale",
    "run_scale",
    "write_scale_report",
    "calibration_in_sample",
    "clinsql_verify_metrics",
    "render_clinsql_verify",
    "run_clinsql_verify",
    "write_clinsql_verify_report",
    "agreement",
    "agreement_markdown",
    "fill_error_types",
    "item_error_type",
    "read_labels",
    "HostileReport",
    "MAIN_KEYS",
    "MAIN_LABELS",
    "RunDir",
    "RunSummary",
    "SafetyCase",
    "ScareItem",
    "candidate_fidelity",
    "combine",
    "compare_runs",
    "duckdb_copy",
    "ehrsql_decisions",
    "ehrsql_pairs",
    "file_sha256",
    "fmt",
    "held_out_splits",
    "jsonable",
    "load_cases",
    "read_case_file",
    "load_ehrsql_split",
    "load_predictions",
    "load_reference",
    "load_scare",
    "method_for_run",
    "read_held_out",
    "read_predictions",
    "record_llm_usage",
    "rescore_runs",
    "render_markdown",
    "run_records",
    "run_hostile",
    "run_safety",
    "split_pairs",
    "run_scare",
    "safety_metrics",
    "shipped_case_files",
    "in_sample",
    "scare_decisions",
    "score_decisions",
    "score_ehrsql",
    "score_records",
    "select_items",
    "threshold_report",
    "write_comparison",
    "write_run_report",
    "write_safety_report",
    "write_threshold_report",
    "MUTATIONS",
    "category_metrics",
    "generate_cases",
    "write_scare_report",
]
