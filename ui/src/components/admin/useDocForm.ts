// The state of a catalog document being edited: the document, the field
// errors of the last save (keyed by form path) and what no field showed.
import { useCallback, useState } from 'react';
import { useClient, useMutation } from 'urql';
import type { CatalogKind } from '../../gql/graphql';
import { type ApiError, type ApiIssue, fromCombinedError, splitFieldErrors, toFormPath } from '../../lib/errors';
import { setIn } from '../../lib/jsonDoc';
import { EntityDocument, PutEntityDocument } from './catalogApi';
import type { FieldErrors } from './docFields';
import { notify } from './notify';

export interface SavedEntity {
  name: string;
  version: number;
  versions: number[];
  document: unknown;
}

/** useDocForm: isNew refuses a name that is taken (putCatalogEntity would make it a new version of that entity). */
export function useDocForm(kind: CatalogKind, initial: Record<string, unknown>, isNew = false) {
  const client = useClient();
  const [doc, setDoc] = useState<Record<string, unknown>>(initial);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [alert, setAlert] = useState<ApiError[]>([]);
  const [warnings, setWarnings] = useState<ApiIssue[]>([]);
  const [{ fetching: saving }, put] = useMutation(PutEntityDocument);

  const change = useCallback((path: string, value: unknown) => {
    setDoc((d) => setIn(d, path, value));
  }, []);

  /** save stores the document as a new version; fields are the form paths (API form) that show errors. */
  const save = useCallback(
    async (fields: readonly string[]): Promise<SavedEntity | undefined> => {
      if (isNew && typeof doc.name === 'string' && doc.name !== '') {
        const taken = await client
          .query(EntityDocument, { kind, name: doc.name }, { requestPolicy: 'network-only' })
          .toPromise();
        if (taken.data?.catalog.entity) {
          setErrors({ name: `${doc.name} exists already: open it to edit it, or choose another name` });
          setAlert([]);
          return undefined;
        }
      }
      const r = await put({ kind, entity: doc });
      if (r.error || !r.data) {
        const errs = r.error ? fromCombinedError(r.error) : [];
        const { byField, rest } = splitFieldErrors(errs, { fields: fields.map(toFormPath) });
        setErrors(byField);
        setAlert(rest);
        return undefined;
      }
      const res = r.data.putCatalogEntity;
      setErrors({});
      setAlert([]);
      setWarnings(
        res.warnings.map((w) => ({
          path: w.path,
          message: w.message,
          severity: w.severity === 'ERROR' ? 'ERROR' : 'WARNING',
        })),
      );
      notify(`Saved: ${res.entity.name} is now at version ${res.entity.version}.`);
      return res.entity;
    },
    [client, doc, isNew, kind, put],
  );

  return { doc, setDoc, change, errors, alert, warnings, save, saving };
}
