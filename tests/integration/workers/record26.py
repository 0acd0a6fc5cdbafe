"""A worker whose main is wrapped in torch's @record: rank FAIL_RANK raises, and @record
writes the exception to TORCHELASTIC_ERROR_FILE for the launcher's root-cause report. The
other ranks wait to be stopped."""
import os
import time

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    if os.environ["RANK"] == os.environ["FAIL_RANK"]:
        raise ValueError(f"record26: rank {os.environ['RANK']} failed on purpose")
    time.sleep(300)


if __name__ == "__main__":
    main()
