import { useEffect, useEffectEvent, useRef, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';

/** A dialog over the page; Escape or the backdrop closes it. */
export function Modal({
  title,
  onClose,
  children,
  footer,
  wide,
}: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  footer?: ReactNode;
  wide?: boolean;
}) {
  const { t } = useTranslation('dags');
  const box = useRef<HTMLDivElement>(null);
  const close = useEffectEvent(() => onClose());
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close();
    };
    window.addEventListener('keydown', onKey);
    // The first field of a form, else the dialog's action.
    const el = box.current;
    const first =
      el?.querySelector<HTMLElement>('.modal-body input:not([disabled]), .modal-body select, .modal-body textarea') ??
      el?.querySelector<HTMLElement>('.modal-foot .btn-primary, .modal-foot .btn-danger');
    first?.focus();
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className={`modal${wide ? ' modal-wide' : ''}`} role="dialog" aria-modal aria-label={title} ref={box}>
        <div className="modal-head">
          <h2>{title}</h2>
          <button type="button" className="btn-icon" aria-label={t('modal.close')} onClick={onClose}>
            ×
          </button>
        </div>
        <div className="modal-body">{children}</div>
        {footer && <div className="modal-foot">{footer}</div>}
      </div>
    </div>
  );
}

/** Asks before an action: `confirm` runs it; errors stay in the dialog. */
export function ConfirmDialog({
  title,
  message,
  confirmLabel,
  danger,
  busy,
  error,
  onConfirm,
  onClose,
  testId,
}: {
  title: string;
  message: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  error?: ReactNode;
  onConfirm: () => void;
  onClose: () => void;
  testId?: string;
}) {
  const { t } = useTranslation('dags');
  return (
    <Modal
      title={title}
      onClose={onClose}
      footer={
        <>
          <button type="button" className="btn" onClick={onClose}>
            {t('modal.cancel')}
          </button>
          <button
            type="button"
            className={`btn ${danger ? 'btn-danger' : 'btn-primary'}`}
            disabled={busy}
            onClick={onConfirm}
            data-testid={testId}
          >
            {busy ? t('modal.working') : confirmLabel}
          </button>
        </>
      }
    >
      <div>{message}</div>
      {error}
    </Modal>
  );
}
