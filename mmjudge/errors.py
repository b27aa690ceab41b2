"""Errors a user sees. Each message is one line naming the file, field or setting and the fix."""


class MMJudgeError(Exception):
    """Base class: caught at the command line and printed without a traceback."""


class ConfigError(MMJudgeError):
    """A configuration value is wrong or missing; raised before any money is spent."""


class CacheError(ConfigError):
    """The response cache file cannot be used (damaged, not mmjudge's, or not writable); found
    when it is opened, before any call, and said with what to do about it."""


class RunFolderBusy(ConfigError):
    """Another live process is running the cell in the same run folder; found before any
    call, whatever response cache either process uses."""


class DatasetError(MMJudgeError):
    """A dataset file is malformed; names file, line and field."""


class ImageError(MMJudgeError):
    """An image cannot be used; recorded on the row, never fatal for a run."""


class UngradableItem(MMJudgeError):
    """An item the judge can never grade, however often it is asked (a replayed file holds no
    grade for it): recorded on the item's row like any failed call, and named in the cell's
    status as failures that running again cannot mend."""


class CredentialError(MMJudgeError):
    """An API key is missing or rejected; stops the run before or at the first call."""


class FatalProviderError(MMJudgeError):
    """A provider error no retry can fix (401, 403, unknown model): the run stops."""


class BudgetExceeded(MMJudgeError):
    """The configured spending cap would be passed by the next call."""


class Interrupted(MMJudgeError):
    """Ctrl-C or SIGTERM stopped the run; what was judged is kept and the run can resume."""

    def __init__(self, message: str, signal_number: int) -> None:
        super().__init__(message)
        self.signal_number = signal_number
