"""The options every command with ``--ray`` shares, and the mapper they pick."""

from __future__ import annotations

import argparse
from typing import Any

from cta.scale import ShardMapper, in_process
from cta.scale.ray_backend import RayOptions, ray_mapper


def add_ray_arguments(parser: Any, what: str) -> None:
    """``--ray``, ``--ray-address`` and ``--ray-actors`` on ``parser``."""
    parser.add_argument(
        "--ray",
        action="store_true",
        help=f"{what} on Ray: a local instance on this machine's cores, or the cluster at "
        "--ray-address / RAY_ADDRESS (needs the ray extra: pip install -e '.[ray]')",
    )
    parser.add_argument(
        "--ray-address", help="a Ray cluster (ray://HOST:10001 or HOST:6379); implies --ray"
    )
    parser.add_argument(
        "--ray-actors",
        type=int,
        help="actors, each loading the models once (default: one per CPU of the cluster)",
    )


def ray_requested(args: argparse.Namespace) -> bool:
    return bool(args.ray or args.ray_address)


def ray_options(args: argparse.Namespace) -> RayOptions:
    return RayOptions(address=args.ray_address, actors=args.ray_actors)


def mapper(args: argparse.Namespace) -> ShardMapper:
    """The Ray actor pool when ``--ray`` was given, else this process."""
    return ray_mapper(ray_options(args)) if ray_requested(args) else in_process
