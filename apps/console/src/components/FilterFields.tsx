/** The labelled fields of a list's filter bar: a choice among values (or any), and a typed value. */
import { describePrincipal } from '../lib/permissions.js';

/** The kinds of object below the server, as permissions and history name them. */
export const KIND_OPTIONS = ['bucket', 'collection', 'group', 'record'] as const;
export const OBJECT_PLACEHOLDER = 'part of its path, * as wildcard';

/** A choice among `options` (value, or [value, label]), with '' for “any”. */
export function FilterSelect({
  label,
  value,
  options,
  onChange,
}: {
  label: string;
  value: string;
  options: ReadonlyArray<string | readonly [string, string]>;
  onChange: (value: string) => void;
}) {
  return (
    <label class="field inline">
      <span class="field-label">{label}</span>
      <select value={value} onChange={(event) => onChange(event.currentTarget.value)}>
        <option value="">any</option>
        {options.map((option) => {
          const [optionValue, optionLabel] = typeof option === 'string' ? [option, option] : option;
          return (
            <option key={optionValue} value={optionValue}>
              {optionLabel}
            </option>
          );
        })}
      </select>
    </label>
  );
}

/** A free text field (ids, paths: no spell check); `grow` takes the rest of the bar. */
export function FilterInput({
  label,
  value,
  onInput,
  placeholder = 'any',
  grow,
  list,
}: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  placeholder?: string;
  grow?: boolean;
  /** The id of a datalist of suggestions. */
  list?: string;
}) {
  return (
    <label class={grow ? 'field inline grow' : 'field inline'}>
      <span class="field-label">{label}</span>
      <input
        list={list}
        placeholder={placeholder}
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
        spellcheck={false}
      />
    </label>
  );
}

/** A FilterInput for a principal, suggesting `suggestions` with their readable names. */
export function PrincipalInput({
  listId,
  suggestions,
  detailed,
  ...input
}: Parameters<typeof FilterInput>[0] & {
  listId: string;
  suggestions: string[];
  /** Suggestions show what kind of principal each is too. */
  detailed?: boolean;
}) {
  return (
    <>
      <FilterInput {...input} list={listId} />
      <datalist id={listId}>
        {suggestions.map((item) => {
          const described = describePrincipal(item);
          return (
            <option key={item} value={item}>
              {detailed ? `${described.title} (${described.detail})` : described.title}
            </option>
          );
        })}
      </datalist>
    </>
  );
}
