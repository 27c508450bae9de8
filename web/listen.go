package web

import (
	"fmt"
	"net"
	"strings"
)

// CheckListen refuses an address beyond loopback unless the server has
// its own TLS certificate: a phone must reach the page over a secure
// context, and a decision must not cross a network in the clear. It says
// what to do instead. loopback reports whether addr is loopback only.
func CheckListen(addr string, tls bool) (loopback bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--listen %q: want HOST:PORT (127.0.0.1:8787)", addr)
	}
	if loopbackHost(host) {
		return true, nil
	}
	if tls {
		return false, nil
	}
	where := host
	if where == "" || where == "0.0.0.0" || where == "::" {
		where = "every interface"
	}
	return false, fmt.Errorf("--listen %s: refusing to listen on %s without TLS. Keep the default loopback address and reach it\n"+
		"  - over SSH: ssh -L 8787:127.0.0.1:8787 THIS-BOX, then open http://localhost:8787 on the laptop;\n"+
		"  - with Tailscale HTTPS: tailscale serve --bg 8787 (https://THIS-BOX.TAILNET.ts.net; pass it as --url);\n"+
		"  - behind another TLS reverse proxy (Caddy, nginx) that forwards to 127.0.0.1:8787 (pass its address as --url);\n"+
		"or give this server a certificate from your own CA with --tls-cert FILE --tls-key FILE",
		strings.TrimSpace(addr), where)
}
