package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

const keyedType = `{"name": "keyed", "parameters": {"admin": {"fields": {
	"endpoint": {"label": "Endpoint", "type": "text"},
	"ssh_key": {"label": "Key", "type": "password", "sensitive": true}}}}}`

func keyedProvider(key string) string {
	return fmt.Sprintf(`{"name": "pool", "providertype": "keyed", "provisioner": {"endpoint": "e", "ssh_key": %q}}`, key)
}

func sealer(t testing.TB) *credentials.Store {
	t.Helper()
	c, err := credentials.New(credentials.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func providerDocs(t testing.TB, key string) *catalog.Catalog {
	t.Helper()
	c := catalog.New()
	if is := c.AddDocument("", "doc", []byte(`{"providers": [`+keyedProvider(key)+`]}`)); is.HasErrors() {
		t.Fatal(is.Err())
	}
	return c
}

// sealedValue is the provider's sealed ssh_key; it fails the test when
// the newest row or any read holds a value in the clear.
func sealedValue(t testing.TB, s *store.Store) any {
	t.Helper()
	ctx := t.Context()
	var clear int
	if err := s.DB().GetContext(ctx, &clear, `SELECT count(*) FROM catalog_entities
		WHERE kind = 'providers' AND name = 'pool' AND body->'provisioner'->>'ssh_key' NOT IN ('__redacted__', '')
		AND version = (SELECT max(version) FROM catalog_entities WHERE kind = 'providers' AND name = 'pool')`); err != nil || clear != 0 {
		t.Errorf("the newest row holds the value in the clear (%d, %v)", clear, err)
	}
	e, _, err := s.Entity(ctx, "acme", catalog.KindProvider, "pool", 0)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.Entities(ctx, "acme", catalog.KindProvider)
	if err != nil {
		t.Fatal(err)
	}
	exported, _ := mustExport(t, s, "acme").Get(catalog.KindProvider, "pool")
	for _, raw := range [][]byte{e.Raw, list[0].Raw, exported.Raw} {
		if !strings.Contains(string(raw), `"ssh_key":"__redacted__"`) {
			t.Errorf("a read shows %s", raw)
		}
	}
	v, err := s.ProviderSecrets(ctx, "acme", "pool", 0)
	if err != nil {
		t.Fatal(err)
	}
	return v["ssh_key"]
}

func TestProviderSecretsImport(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	s.SetSealer(sealer(t))
	ctx := t.Context()
	ensure(t, s, "acme")
	if _, _, err := s.CreateEntity(ctx, store.SuperadminTenant, catalog.KindProviderType, []byte(keyedType)); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		key  string
		want store.ImportResult
		kept string
	}{
		{"k1", store.ImportResult{Created: 1}, "k1"},
		{"k1", store.ImportResult{Unchanged: 1}, "k1"},           // same value: nothing written
		{"k2", store.ImportResult{Updated: 1}, "k2"},             // only the value changed: a new version
		{store.Redacted, store.ImportResult{Unchanged: 1}, "k2"}, // the placeholder keeps it
	} {
		if got := mustImport(t, s, "acme", providerDocs(t, c.key)); got != c.want {
			t.Errorf("import %d: %+v, want %+v", i, got, c.want)
		}
		if got := sealedValue(t, s); got != c.kept {
			t.Errorf("import %d: sealed %v, want %v", i, got, c.kept)
		}
	}
	// Deleting a version deletes its sealed values.
	if err := s.DeleteEntity(ctx, "acme", catalog.KindProvider, "pool", 0); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.DB().GetContext(ctx, &n, `SELECT count(*) FROM provider_secrets`); err != nil || n != 0 {
		t.Errorf("%d sealed rows left (%v)", n, err)
	}
}

// Rows written before their type marked the field sensitive are redacted
// on read, and the next write (an export imported back) seals them.
func TestProviderSecretsLegacyRows(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	s.SetSealer(sealer(t))
	ctx := t.Context()
	ensure(t, s, "acme")
	if _, _, err := s.CreateEntity(ctx, "acme", catalog.KindProvider, []byte(keyedProvider("old-key"))); err != nil {
		t.Fatal(err) // no type yet: nothing is sensitive
	}
	if _, _, err := s.CreateEntity(ctx, store.SuperadminTenant, catalog.KindProviderType, []byte(keyedType)); err != nil {
		t.Fatal(err)
	}
	var clear int
	_ = s.DB().GetContext(ctx, &clear, `SELECT count(*) FROM catalog_entities WHERE body::text LIKE '%old-key%'`)
	if clear != 1 {
		t.Fatalf("setup: %d clear rows", clear)
	}
	exp := mustExport(t, s, "acme")
	if e, _ := exp.Get(catalog.KindProvider, "pool"); strings.Contains(string(e.Raw), "old-key") {
		t.Fatalf("export shows %s", e.Raw)
	}
	if got, err := s.ProviderSecrets(ctx, "acme", "pool", 0); err != nil || got["ssh_key"] != "old-key" {
		t.Fatalf("ProviderSecrets = %v, %v", got, err)
	}
	if got := mustImport(t, s, "acme", exp); got.Updated != 1 {
		t.Errorf("importing the export back: %+v, want the provider rewritten", got)
	}
	if got := sealedValue(t, s); got != "old-key" {
		t.Errorf("sealed %v, want the old clear value", got)
	}
}

func TestProviderSecretsWithoutKey(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	ensure(t, s, "acme")
	if _, _, err := s.CreateEntity(ctx, store.SuperadminTenant, catalog.KindProviderType, []byte(keyedType)); err != nil {
		t.Fatal(err)
	}
	var ve *catalog.ValidationError
	_, _, err := s.CreateEntity(ctx, "acme", catalog.KindProvider, []byte(keyedProvider("k1")))
	if !errors.As(err, &ve) || ve.Issues[0].Path != "provisioner.ssh_key" || !strings.Contains(err.Error(), "COOPR_CREDENTIAL_KEY") {
		t.Fatalf("write without a key: %v", err)
	}
	if _, err := s.ImportCatalog(ctx, "acme", providerDocs(t, "k1")); !errors.As(err, &ve) {
		t.Fatalf("import without a key: %v", err)
	}
	// Sealed under a key, then the key is gone: the placeholder cannot keep
	// what it cannot open, and the value is not handed out.
	s.SetSealer(sealer(t))
	if _, _, err := s.CreateEntity(ctx, "acme", catalog.KindProvider, []byte(keyedProvider("k1"))); err != nil {
		t.Fatal(err)
	}
	s.SetSealer(nil)
	if _, _, err := s.UpdateEntity(ctx, "acme", catalog.KindProvider, []byte(keyedProvider(store.Redacted))); !errors.As(err, &ve) {
		t.Errorf("placeholder without the key: %v", err)
	}
	if _, err := s.ProviderSecrets(ctx, "acme", "pool", 0); !errors.Is(err, store.ErrNoKey) {
		t.Errorf("ProviderSecrets without the key: %v", err)
	}
}
