-- A supervisor process started by a cluster primary (`jobvisor start
-- --processes N`) names its primary and its slot, so the dashboard shows the
-- processes of one primary together under their host. Both stay NULL for a
-- supervisor that runs alone. Nullable columns without a default: a
-- catalog-only change.
ALTER TABLE jobvisor.supervisors ADD COLUMN cluster_primary text;
ALTER TABLE jobvisor.supervisors ADD COLUMN cluster_slot integer;
