package control

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// clusterKey makes the per-cluster ed25519 key drivers log in with unless
// the provider supplies one (docs/drivers.md): vm drivers put its public
// half into the machines they make, and it lives only in the credential
// store, under the "ssh" namespace.
func clusterKey(clusterID string) (map[string]any, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("cluster ssh key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "coopr cluster "+clusterID)
	if err != nil {
		return nil, fmt.Errorf("cluster ssh key: %w", err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("cluster ssh key: %w", err)
	}
	authorized := string(ssh.MarshalAuthorizedKey(sp))
	return map[string]any{
		"privateKey": string(pem.EncodeToMemory(block)),
		"publicKey":  authorized[:len(authorized)-1] + " coopr-" + clusterID,
	}, nil
}
