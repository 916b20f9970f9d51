#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Generate configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf -fi
echo "Now run ./configure && make && make check"
