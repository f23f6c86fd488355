"""The replay of what the cluster is set to and who may do what: ConfigurationsDelta, FeaturesDelta,
ClientQuotasDelta, ProducerIdsDelta, the ZooKeeper migration state, AclsDelta, ScramDelta and
DelegationTokenDelta."""

from __future__ import annotations

from kafka_tools.metadata.delta_base import Delta
from kafka_tools.metadata.image import (
    CONFIG_RESOURCE_TYPES,
    SCRAM_MECHANISMS,
    Acl,
    DelegationToken,
    ProducerIdBlock,
    code_name,
)


class SettingsDelta(Delta):
    """ConfigRecord … RemoveDelegationTokenRecord: configs, features, quotas, producer ids, security."""

    # -- configs, features, quotas, producer ids -----------------------------------------------------

    def _config(self, offset: int, f: dict) -> None:
        rtype, rname, key, value = f["resourceType"], f.get("resourceName", ""), f["name"], f.get("value")
        resource = (rtype, rname)
        settings = self.image.configs.get(resource)
        old = None if settings is None else settings.get(key)
        if value is None:
            if settings is not None:
                settings.pop(key, None)
                if not settings:
                    del self.image.configs[resource]
        else:
            self.image.configs.setdefault(resource, {})[key] = value
        if self._wants(offset) and old != value:
            subject = f"{code_name(CONFIG_RESOURCE_TYPES, rtype)} {rname or '<default>'}"
            base = {
                "resourceType": code_name(CONFIG_RESOURCE_TYPES, rtype),
                "resourceName": rname,
                "name": key,
            }
            if value is None:
                self._event(
                    offset, "config-deleted", subject, f"{key} deleted (was {old})", **base, oldValue=old
                )
            else:
                self._event(
                    offset, "config-set", subject, f"{key}={value}", **base, value=value, oldValue=old
                )

    def _feature(self, offset: int, f: dict) -> None:
        name, level = f["name"], f.get("featureLevel", 0)
        old = self.image.features.get(name)
        if level == 0:
            self.image.features.pop(name, None)  # level 0 removes a feature
        else:
            self.image.features[name] = level
        if self._wants(offset) and old != (level or None):
            self._event(
                offset,
                "feature-level",
                name,
                f"{name} {old if old is not None else '-'} -> {level}",
                feature=name,
                level=level,
            )

    def _client_quota(self, offset: int, f: dict) -> None:
        entity = tuple(sorted((e.get("entityType", ""), e.get("entityName")) for e in f.get("entity") or ()))
        key = f["key"]
        quotas = self.image.client_quotas
        if f.get("remove"):
            values = quotas.get(entity)
            if values is not None:
                values.pop(key, None)
                if not values:
                    del quotas[entity]
        else:
            quotas.setdefault(entity, {})[key] = f.get("value", 0.0)
        if self._wants(offset):
            who = ",".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity)
            what = "removed" if f.get("remove") else f"= {f.get('value')}"
            self._event(
                offset, "quota-removed" if f.get("remove") else "quota-set", who, f"{key} {what}", key=key
            )

    def _producer_ids(self, offset: int, f: dict) -> None:
        self.image.producer_ids = ProducerIdBlock(
            f.get("brokerId", -1), f.get("brokerEpoch", -1), f.get("nextProducerId", -1)
        )

    def _zk_migration(self, offset: int, f: dict) -> None:
        self.image.zk_migration_state = f.get("zkMigrationState")

    # -- security: ACLs, SCRAM, delegation tokens ------------------------------------------------

    def _acl(self, offset: int, f: dict) -> None:
        acl = Acl(
            f["id"],
            f.get("resourceType", 0),
            f.get("resourceName", ""),
            f.get("patternType", 0),
            f.get("principal", ""),
            f.get("host", ""),
            f.get("operation", 0),
            f.get("permissionType", 0),
        )
        self.image.acls[acl.acl_id] = acl
        if self._wants(offset):
            self._event(
                offset,
                "acl-created",
                acl.principal,
                f"acl {acl.acl_id} on {acl.resource_name}",
                aclId=acl.acl_id,
            )

    def _remove_acl(self, offset: int, f: dict) -> None:
        if self.image.acls.pop(f["id"], None) is None:
            self._inconsistent(offset, "RemoveAccessControlEntryRecord", f"acl {f['id']} is not in the image")
        elif self._wants(offset):
            self._event(offset, "acl-deleted", f["id"], "deleted", aclId=f["id"])

    def _scram(self, offset: int, f: dict) -> None:
        # Only who and how: salt, storedKey and serverKey are never kept.
        user, mechanism = f["name"], f.get("mechanism", 0)
        self.image.scram_users[(user, mechanism)] = f.get("iterations", 0)
        if self._wants(offset):
            mech = code_name(SCRAM_MECHANISMS, mechanism)
            self._event(offset, "scram-credential-set", user, mech, user=user, mechanism=mech)

    def _remove_scram(self, offset: int, f: dict) -> None:
        user, mechanism = f["name"], f.get("mechanism", 0)
        self.image.scram_users.pop((user, mechanism), None)
        if self._wants(offset):
            mech = code_name(SCRAM_MECHANISMS, mechanism)
            self._event(offset, "scram-credential-deleted", user, mech, user=user, mechanism=mech)

    def _delegation_token(self, offset: int, f: dict) -> None:
        token = DelegationToken(
            f["tokenId"],
            f.get("owner", ""),
            f.get("requester", ""),
            list(f.get("renewers") or ()),
            f.get("issueTimestamp", -1),
            f.get("maxTimestamp", -1),
            f.get("expirationTimestamp", -1),
        )
        self.image.delegation_tokens[token.token_id] = token
        if self._wants(offset):
            self._event(offset, "token-created", token.token_id, f"owner {token.owner}", owner=token.owner)

    def _remove_delegation_token(self, offset: int, f: dict) -> None:
        if self.image.delegation_tokens.pop(f["tokenId"], None) is not None and self._wants(offset):
            self._event(offset, "token-removed", f["tokenId"], "removed")
