"""The `samebits` console command."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="samebits", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="run the invariance suite on the default device")
    v.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="auto: CUDA when a supported GPU and the CUDA kernels are present, else CPU")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--only", default=None, help="comma-separated property names to run")
    v.add_argument("--json", default=None, help="also write the results to this JSON file")
    sub.add_parser("info", help="print the build and device configuration")
    args = parser.parse_args(argv)

    if args.command == "verify":
        from samebits.verify import run
        only = args.only.split(",") if args.only else None
        return run(device=args.device, seed=args.seed, only=only, json_path=args.json)
    if args.command == "info":
        from samebits.verify import info
        print(info())
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
