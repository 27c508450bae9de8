// Package devices keeps the browsers paired with sluice's web approver:
// the devices (devices.json) and the one pairing code waiting
// (pairing.json) in the web approver's state directory, shared by the
// server, 'sluice web pair|devices|revoke' and the console, which lists
// and revokes devices without linking the web server.
//
// It keeps no secret: a device's key lives in its browser's cookie, the
// store holds its SHA-256. It imports neither net/http nor a WebAuthn
// library: a device's passkeys are kept as the server encoded them.
// A revocation is a rewrite of devices.json, which the server reads
// again at the next request a device makes.
package devices
