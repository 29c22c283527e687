// Approvals: built by its own change (see docs/admin_console.md).
export function ApprovalsTab() {
  return <p className="empty">This part of the console is not built yet.</p>
}
