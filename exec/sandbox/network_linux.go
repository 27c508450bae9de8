package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A networked run with Spec.Proxy reaches nothing but the proxy the caller
// serves on the confinement's ProxyListener, in one of two ways.
//
// Its own network namespace, where the run is boxed (BoxPath, user
// namespaces allowed): the box makes a network namespace with only a
// loopback, brings it up, listens on 127.0.0.1:3128 inside it and hands
// that listening socket to the caller over a socket pair before it execs
// the command. The caller accepts the run's connections from it directly:
// no bridge process to start, to keep alive or to kill, no copy of the
// bytes, no path in the file system that another process could connect
// to. Only processes inside the namespace reach 127.0.0.1:3128 there, and
// only the run's processes are inside it (another run is in a user
// namespace of its own, without the capabilities to join this one); the
// namespace goes with the run's last process and the listener, which
// Close closes. The run's loopback is its own: its tests listen and
// connect on any other port.
//
// Without namespaces: the caller's proxy listens on 127.0.0.1 on a port
// the kernel picks, Landlock lets the run connect to that port and no
// other (and bind none), and the seccomp filter lets it open plain TCP
// stream sockets only (no UDP, raw, MPTCP; no TCP Fast Open send, which
// connects past Landlock; no listen, which binds past it). Landlock's port rule holds for any address,
// so the run could still reach another host on that one port; and its
// tests cannot connect to a server of their own. The sandbox line says
// which applies (Network).

// nsProxyPort is where a run in its own namespace finds its proxy.
const nsProxyPort = 3128

// proxySupported reports whether this platform can give a run its own
// proxy.
func proxySupported() bool { return true }

// netConf is how one proxied run reaches its proxy.
type netConf struct {
	ownNS  bool   // a namespace of its own; else the port fallback
	why    string // why not its own namespace
	port   int    // the run reaches its proxy on 127.0.0.1:port
	ln     net.Listener
	boxEnd *os.File // own namespace: the box's end of the socket pair, until it started
}

// prepareNet plans spec's network: nil without a proxy.
func prepareNet(spec *Spec, abi int) (*netConf, error) {
	if !spec.Proxy {
		return nil, nil
	}
	why := boxWhy(spec)
	if why == "" {
		return nsNet()
	}
	if abi < 4 {
		return nil, fmt.Errorf("sandbox: a networked run through a proxy needs its own network namespace (%s) or Landlock's TCP rules (ABI 4, Linux 6.7; this kernel's is %d)", why, abi)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: the proxy's port: %w", err)
	}
	return &netConf{why: why, port: ln.Addr().(*net.TCPAddr).Port, ln: ln}, nil
}

// nsNet makes the socket pair a boxed run's listener comes back on.
func nsNet() (*netConf, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the proxy's socket pair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "sluice-proxy-ctrl")
	ctrl, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("sandbox: the proxy's socket pair: %w", err)
	}
	return &netConf{
		ownNS: true, port: nsProxyPort,
		ln:     &nsListener{ctrl: ctrl.(*net.UnixConn)},
		boxEnd: os.NewFile(uintptr(fds[1]), "sluice-proxy-box"),
	}, nil
}

// connectPort is the one TCP port Landlock lets the run connect to, or 0
// when Landlock leaves the network alone.
func (n *netConf) connectPort() int {
	if n == nil || n.ownNS {
		return 0
	}
	return n.port
}

// started lets go of the box's end once the box holds it: the box
// closing its copy is then how a box that died before sending its
// listener shows.
func (n *netConf) started() {
	if n != nil && n.boxEnd != nil {
		n.boxEnd.Close()
		n.boxEnd = nil
	}
}

func (n *netConf) close() {
	if n == nil {
		return
	}
	n.started()
	n.ln.Close()
}

// ProxyListener is where the caller serves the run's proxy: each
// connection accepted is one the run made to its proxy address
// (ProxyURL). Close closes it. Nil when the run has no proxy.
func (c *Confinement) ProxyListener() net.Listener {
	if c == nil || c.net == nil {
		return nil
	}
	return c.net.ln
}

// ProxyURL is the proxy's address as the run reaches it, "" when the run
// has no proxy.
func (c *Confinement) ProxyURL() string {
	if c == nil || c.net == nil {
		return ""
	}
	return "http://127.0.0.1:" + strconv.Itoa(c.net.port)
}

// ProxyShared reports whether processes other than the run's can reach
// its proxy (the port fallback, on the host's loopback): the caller's
// proxy should then take only clients that know a token of the run's.
func (c *Confinement) ProxyShared() bool { return c != nil && c.net != nil && !c.net.ownNS }

// Network says, for the sandbox line, how the run reaches the network.
func (c *Confinement) Network() string {
	switch {
	case c == nil:
		return ""
	case c.net != nil && c.net.ownNS:
		return "network: own namespace, proxy only"
	case c.net != nil:
		return "network: proxy port only (no namespaces: " + c.net.why + ")"
	case c.spec.Profile.Network():
		return "network: any host"
	}
	return "network: none"
}

// errNoNamespace refuses a start that would leave a run meant for its own
// network namespace on the host's network.
var errNoNamespace = errors.New("sandbox: the kernel refused the run's network namespace; prepare it again to confine it to its proxy's port instead")

// errStartedOnce refuses a second start with a confinement whose run
// has a network namespace of its own: its proxy listener is the first
// run's.
var errStartedOnce = errors.New("sandbox: a run in a network namespace of its own is started once per confinement")

// nsListener accepts the connections a run made inside its own network
// namespace, on the listening socket its box sends over ctrl.
type nsListener struct {
	ctrl *net.UnixConn
	once sync.Once
	mu   sync.Mutex
	ln   net.Listener // once received
	err  error
	shut bool
}

// Accept waits for the box's listener first, then for a connection.
func (l *nsListener) Accept() (net.Conn, error) {
	l.once.Do(l.receive)
	l.mu.Lock()
	ln, err := l.ln, l.err
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ln.Accept()
}

// receive takes the listening socket the box sends.
func (l *nsListener) receive() {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	_, oobn, _, _, err := l.ctrl.ReadMsgUnix(buf, oob)
	var fds []int
	if err == nil {
		fds, err = unixRights(oob[:oobn])
	}
	if errors.Is(err, io.EOF) {
		err = nil // the box ended without sending: said below
	}
	var ln net.Listener
	if err == nil && len(fds) == 1 {
		f := os.NewFile(uintptr(fds[0]), "sluice-proxy")
		ln, err = net.FileListener(f)
		f.Close()
	} else {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err == nil {
			err = errors.New("the box sent no listener (it ended before the command started)")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.shut:
		if ln != nil {
			ln.Close()
		}
		l.err = net.ErrClosed
	case err != nil:
		l.err = fmt.Errorf("sandbox: the run's proxy listener: %w", err)
	default:
		l.ln = ln
	}
	l.ctrl.Close()
}

// unixRights returns the descriptors an SCM_RIGHTS message carried.
func unixRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// Close implements net.Listener.
func (l *nsListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shut = true
	l.ctrl.Close() // ends a receive that waits
	if l.ln != nil {
		return l.ln.Close()
	}
	return nil
}

// Addr is the proxy's address inside the run's namespace.
func (l *nsListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: nsProxyPort}
}

// boxNetwork is the box's part, inside the new network namespace: the
// loopback up, a listener on 127.0.0.1:port, sent on fd to the caller.
// The box closes both before it execs the command, which never holds them.
func boxNetwork(fd, port int) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network: %v", err)
	}
	ifr, err := unix.NewIfreq("lo")
	if err == nil {
		err = unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr)
	}
	if err == nil {
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		err = unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
	}
	unix.Close(s)
	if err != nil {
		return fmt.Errorf("bring the loopback up: %v", err)
	}
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the proxy's listener: %v", err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("the proxy's listener: bind: %v", err)
	}
	if err := unix.Listen(l, unix.SOMAXCONN); err != nil {
		return fmt.Errorf("the proxy's listener: listen: %v", err)
	}
	if err := unix.Sendmsg(fd, []byte{0}, unix.UnixRights(l), nil, unix.MSG_NOSIGNAL); err != nil {
		return fmt.Errorf("send the proxy's listener: %v", err)
	}
	return unix.Close(fd)
}

// grantPort lets ruleset fd connect to TCP port (none when 0).
func grantPort(fd, port int) error {
	if port == 0 {
		return nil
	}
	// linux/landlock.h: struct landlock_net_port_attr (packed, two
	// 64-bit words), rule type LANDLOCK_RULE_NET_PORT; x/sys has
	// neither.
	const ruleNetPort = 2
	attr := struct{ access, port uint64 }{unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, uint64(port)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), ruleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("sandbox: grant port %d: %w", port, e)
	}
	return nil
}

// netRecord is the box plan's record of a network namespace: its proxy's
// port, or nothing.
func netRecord(port int) []string {
	if port == 0 {
		return nil
	}
	return []string{strconv.Itoa(port)}
}
