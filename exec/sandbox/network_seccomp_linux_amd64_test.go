package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompProxyOnly walks the program of a proxied run without
// namespaces: it opens plain TCP stream sockets only, whatever the flags
// beside the type, never sends with TCP Fast Open and never listens; the networked
// program it replaces allowed UDP and raw sockets.
func TestSeccompProxyOnly(t *testing.T) {
	t.Parallel()
	progs, err := programs()
	if err != nil {
		t.Fatal(err)
	}
	const x8664 = 0xc000003e
	allow, eacces := uint32(unix.SECCOMP_RET_ALLOW), unix.SECCOMP_RET_ERRNO|uint32(unix.EACCES)
	for _, c := range []struct {
		name        string
		nr          uint32
		args        [6]uint64
		proxy, open uint32 // ProxyOnly's answer, Networked's
	}{
		{"tcp4", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_STREAM}, allow, allow},
		{"tcp6 nonblock cloexec", unix.SYS_SOCKET, [6]uint64{unix.AF_INET6, unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP}, allow, allow},
		{"tcp, high bits set", unix.SYS_SOCKET, [6]uint64{0xffffffff00000000 | unix.AF_INET, unix.SOCK_STREAM, 0xffffffff00000000 | unix.IPPROTO_TCP}, allow, allow},
		{"mptcp", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, eacces, eacces},
		{"sctp stream", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, eacces, allow},
		{"udp", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_DGRAM}, eacces, allow},
		{"udp6 cloexec", unix.SYS_SOCKET, [6]uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}, eacces, allow},
		{"icmp dgram", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, eacces, allow},
		{"raw", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, eacces, allow},
		{"seqpacket", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_SEQPACKET}, eacces, allow},
		{"unix", unix.SYS_SOCKET, [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}, eacces, eacces},
		{"netlink", unix.SYS_SOCKET, [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW}, eacces, eacces},
		{"packet", unix.SYS_SOCKET, [6]uint64{unix.AF_PACKET, unix.SOCK_RAW}, eacces, eacces},
		{"sendto", unix.SYS_SENDTO, [6]uint64{3, 0, 1, unix.MSG_NOSIGNAL}, allow, allow},
		{"sendto fastopen", unix.SYS_SENDTO, [6]uint64{3, 0, 1, unix.MSG_FASTOPEN | unix.MSG_NOSIGNAL}, eacces, allow},
		{"sendmsg fastopen", unix.SYS_SENDMSG, [6]uint64{3, 0, unix.MSG_FASTOPEN}, eacces, allow},
		{"sendmsg", unix.SYS_SENDMSG, [6]uint64{3, 0, unix.MSG_DONTWAIT}, allow, allow},
		{"sendmmsg fastopen", unix.SYS_SENDMMSG, [6]uint64{3, 0, 1, unix.MSG_FASTOPEN}, eacces, allow},
		{"listen", unix.SYS_LISTEN, [6]uint64{3, 1}, eacces, allow},
	} {
		for i, want := range map[int]uint32{3: c.proxy, 1: c.open} {
			ret, _, _, err := walk(progs[i][:], x8664, c.nr, c.args)
			if err != nil {
				t.Fatalf("program %d, %s: %v", i, c.name, err)
			}
			if ret != want {
				t.Errorf("program %d, %s: %#x, want %#x", i, c.name, ret, want)
			}
		}
	}
}
