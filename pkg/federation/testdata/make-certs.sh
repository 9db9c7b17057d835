#!/bin/sh
# Makes a CA, a server certificate and client certificates for fedirl's TLS
# and mutual TLS, with openssl (the commands of CERTIFICATES.md; its test runs
# this script). Usage: make-certs.sh DIR SERVER_NAME CLIENT_ID...
#   SERVER_NAME: the host name or IP address clients dial (--server NAME:PORT)
#   CLIENT_ID:   each client's id (--id); its certificate's common name must equal it
set -eu
dir=$1; name=$2; shift 2
mkdir -p "$dir" && cd "$dir"
umask 077
# 1. The CA: a key and a self-signed certificate (keep ca.key offline).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
	-subj "/CN=fedirl CA" -keyout ca.key -out ca.crt 2>/dev/null
# 2. The server: its name goes in subjectAltName (DNS or IP), which TLS checks.
case $name in
*[!0-9.]*) san="DNS:$name" ;;
*) san="IP:$name" ;;
esac
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
	-keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
	-extfile server.ext -out server.crt 2>/dev/null
# 3. One certificate per client (mutual TLS): common name = the client id.
for id in "$@"; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$id" \
		-keyout "$id.key" -out "$id.csr" 2>/dev/null
	printf 'extendedKeyUsage=clientAuth\n' >client.ext
	openssl x509 -req -in "$id.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
		-extfile client.ext -out "$id.crt" 2>/dev/null
done
rm -f ./*.csr ./*.ext ca.srl
chmod 644 ./*.crt
