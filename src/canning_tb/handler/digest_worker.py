"""Background digest of one window: python -m canning_tb.handler.digest_worker <manifest>.

Runs apart from the training process, which never waits for it; on failure it logs one line and exits 0.
"""
import logging
import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="canning digest: %(message)s")
    if len(argv) != 1:
        logging.warning("usage: python -m canning_tb.handler.digest_worker <manifest.canning.json>")
        return 0
    try:
        from canning_tb.store.source_digest import write_digest
        write_digest(argv[0])
    except Exception as e:  # the digest can be built later by the plugin; never make noise in training logs
        logging.warning("no digest for %s (%s: %s); the plugin will compute it on first open", argv[0],
                        type(e).__name__, e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
