// Package libvirt is the vm driver named "libvirt": every node is a
// virtual machine of a libvirt daemon (QEMU), local or remote.
package libvirt
