#!/usr/bin/env bash
# Builds local Docker images of the engines Debian packages, without a registry:
#   debootstrap --variant=minbase --include=PKG bookworm DIR
#   tar -C DIR -c . | docker import - benchcage/<engine>:<version>
# Downloads come only from the Debian mirror apt already uses. An image that
# already exists is skipped; the root filesystem tarball is cached under
# $BENCHCAGE_IMAGE_CACHE so that re-importing after `docker rmi` needs no network.
# Usage: scripts/images.sh [engine...]   (default: postgres mariadb redis)
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${BENCHCAGE_IMAGE_CACHE:-/var/cache/benchcage/images}
suite=bookworm

# engine -> "tag packages"
declare -A spec=(
  [postgres]="15 postgresql-15"
  [mariadb]="10.11 mariadb-server,mariadb-plugin-rocksdb"
  [redis]="7.0 redis-server"
)

# The mirror apt already uses (deb822 sources first, then one-line sources).
mirror() {
  local uri=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    uri=$(awk '
      /^URIs:/ { u=$2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "'"$suite"'") { print u; exit } }
      /^$/ { u="" }' /etc/apt/sources.list.d/*.sources)
  fi
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    uri=$(awk '$1 == "deb" && $0 ~ / '"$suite"' / { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
  fi
  if [[ -z $uri ]]; then
    echo "images.sh: no apt source for $suite in /etc/apt/sources.list(.d); images are built from the Debian mirror apt already uses: add one" >&2
    return 1
  fi
  echo "$uri"
}

docker info >/dev/null 2>&1 || bash scripts/dockerd.sh
command -v debootstrap >/dev/null || { echo "images.sh: debootstrap missing; run \`make deps\`" >&2; exit 1; }

engines=("$@")
((${#engines[@]})) || engines=(postgres mariadb redis)
url=$(mirror) || exit 2
mkdir -p "$cache/debs"

for engine in "${engines[@]}"; do
  [[ -n ${spec[$engine]:-} ]] || { echo "images.sh: unknown engine '$engine' (known: ${!spec[*]})" >&2; exit 2; }
  read -r tag packages <<<"${spec[$engine]}"
  image="benchcage/$engine:$tag"
  if docker image inspect "$image" >/dev/null 2>&1; then
    echo "images.sh: $image exists, skipped"
    continue
  fi
  rootfs_tar="$cache/$engine-$tag.tar"
  if [[ ! -s $rootfs_tar ]]; then
    dir=$(mktemp -d "/var/tmp/benchcage-rootfs-$engine.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
    echo "images.sh: debootstrap $suite + $packages from $url (about a minute)"
    start=$SECONDS
    debootstrap --variant=minbase --include="$packages" --cache-dir="$cache/debs" \
      "$suite" "$dir" "$url" >"$cache/$engine-debootstrap.log" 2>&1 ||
      { echo "images.sh: debootstrap failed; see $cache/$engine-debootstrap.log" >&2; tail -n 20 "$cache/$engine-debootstrap.log" >&2; exit 1; }
    # Nothing inside the image needs the package cache, docs or locales.
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* \
      "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/*
    tar -C "$dir" --numeric-owner -cf "$rootfs_tar.tmp" .
    mv "$rootfs_tar.tmp" "$rootfs_tar"
    rm -rf "$dir"
    trap - EXIT
    echo "images.sh: root filesystem of $engine built in $((SECONDS - start))s"
  fi
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/15/bin' \
    --change 'ENV LANG=C.UTF-8' \
    - "$image" <"$rootfs_tar" >/dev/null
  echo "images.sh: imported $image ($(docker image inspect -f '{{.Size}}' "$image" | numfmt --to=iec))"
done
