#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make-test-certs.sh DIR: the certificates the API tests need, made fresh each run (valid 2 days):
#   ca.pem          test CA;  server.pem/.key  localhost + 127.0.0.1, signed by it
#   client.pem/.key client certificate signed by the test CA (accepted)
#   other-ca.pem    another CA;  rogue.pem/.key  client certificate signed by it (refused)
set -euo pipefail
if ! command -v openssl >/dev/null; then
  echo "make-test-certs: openssl is missing (scripts/install-deps installs it)" >&2
  exit 1
fi
dir=$1
mkdir -p "$dir"
cd "$dir"

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

new_ca() {  # new_ca NAME COMMON_NAME
  new_key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem"
}

new_leaf() {  # new_leaf NAME CA COMMON_NAME EXTENSIONS
  new_key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$3" -out "$1.csr"
  printf '%b' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 -sha256 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

new_ca ca "nvme-adapt test CA"
new_ca other-ca "another CA"
new_leaf server ca localhost "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
new_leaf client ca operator "extendedKeyUsage=clientAuth\n"
new_leaf rogue other-ca operator "extendedKeyUsage=clientAuth\n"
chmod 0600 ./*.key
