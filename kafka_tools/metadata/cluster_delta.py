"""ClusterDelta's replay: brokers registered, fenced and changed, controllers, the KRaft voters and the
leader (metadata/replay.py's Replayer is made of this and the other deltas)."""

from __future__ import annotations

from kafka_tools.metadata.delta_base import Delta
from kafka_tools.metadata.image import (
    Broker,
    Controller,
    Endpoint,
    Voter,
)


def _endpoints(items: list[dict] | None) -> list[Endpoint]:
    return [
        Endpoint(e.get("name", ""), e.get("host", ""), e.get("port", 0), e.get("securityProtocol"))
        for e in items or ()
    ]


def _features(items: list[dict] | None) -> dict[str, tuple[int, int]]:
    return {
        f.get("name", ""): (f.get("minSupportedVersion", 0), f.get("maxSupportedVersion", 0))
        for f in items or ()
    }


class ClusterDelta(Delta):
    """RegisterBrokerRecord … LeaderChangeMessage: the cluster's members."""

    # -- cluster: brokers, controllers, voters ---------------------------------------------------

    def _register_broker(self, offset: int, f: dict) -> None:
        bid = f["brokerId"]
        broker = Broker(
            broker_id=bid,
            epoch=f.get("brokerEpoch", -1),
            incarnation_id=f.get("incarnationId", ""),
            endpoints=_endpoints(f.get("endPoints")),
            rack=f.get("rack"),
            fenced=bool(f.get("fenced", True)),
            in_controlled_shutdown=bool(f.get("inControlledShutdown", False)),
            features=_features(f.get("features")),
            log_dirs=list(f.get("logDirs") or ()),
            is_migrating_zk_broker=bool(f.get("isMigratingZkBroker", False)),
        )
        old = self.image.brokers.get(bid)
        self.image.brokers[bid] = broker
        if self._wants(offset):
            state = "fenced" if broker.fenced else "unfenced"
            again = f"re-registered (epoch {old.epoch} -> {broker.epoch})" if old else "registered"
            self._event(
                offset,
                "broker-registered",
                f"broker {bid}",
                f"{again}, {state}",
                broker=bid,
                epoch=broker.epoch,
            )

    def _unregister_broker(self, offset: int, f: dict) -> None:
        bid = f["brokerId"]
        old = self.image.brokers.pop(bid, None)
        if old is None:
            self._inconsistent(offset, "UnregisterBrokerRecord", f"broker {bid} is not registered")
        elif self._wants(offset):
            self._event(offset, "broker-unregistered", f"broker {bid}", "unregistered", broker=bid)

    def _broker(self, offset: int, record_type: str, bid: int, epoch: int) -> Broker | None:
        broker = self.image.brokers.get(bid)
        if broker is None:
            self._inconsistent(offset, record_type, f"broker {bid} is not registered")
        elif epoch != -1 and broker.epoch != epoch:
            # ClusterDelta's getBrokerOrThrow: a record for another incarnation is not applied.
            self._inconsistent(
                offset, record_type, f"broker {bid} has epoch {broker.epoch}, the record {epoch}: not applied"
            )
            return None
        return broker

    def _set_fenced(self, offset: int, broker: Broker, fenced: bool) -> None:
        if broker.fenced != fenced and self._wants(offset):
            kind = "broker-fenced" if fenced else "broker-unfenced"
            self._event(offset, kind, f"broker {broker.broker_id}", kind[7:], broker=broker.broker_id)
        broker.fenced = fenced

    def _fence(self, offset: int, f: dict) -> None:
        broker = self._broker(offset, "FenceBrokerRecord", f["id"], f.get("epoch", -1))
        if broker is not None:
            self._set_fenced(offset, broker, True)

    def _unfence(self, offset: int, f: dict) -> None:
        broker = self._broker(offset, "UnfenceBrokerRecord", f["id"], f.get("epoch", -1))
        if broker is not None:
            self._set_fenced(offset, broker, False)

    def _broker_change(self, offset: int, f: dict) -> None:
        broker = self._broker(
            offset, "BrokerRegistrationChangeRecord", f["brokerId"], f.get("brokerEpoch", -1)
        )
        if broker is None:
            return
        fenced = f.get("fenced", 0)  # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
        if fenced == 1:
            self._set_fenced(offset, broker, True)
        elif fenced == -1:
            self._set_fenced(offset, broker, False)
        if f.get("inControlledShutdown", 0) == 1 and not broker.in_controlled_shutdown:
            broker.in_controlled_shutdown = True
            if self._wants(offset):
                self._event(
                    offset,
                    "broker-controlled-shutdown",
                    f"broker {broker.broker_id}",
                    "in controlled shutdown",
                    broker=broker.broker_id,
                )
        if f.get("logDirs"):
            broker.log_dirs = list(f["logDirs"])

    def _register_controller(self, offset: int, f: dict) -> None:
        cid = f["controllerId"]
        self.image.controllers[cid] = Controller(
            cid,
            f.get("incarnationId", ""),
            _endpoints(f.get("endPoints")),
            _features(f.get("features")),
            bool(f.get("zkMigrationReady", False)),
        )
        if self._wants(offset):
            self._event(offset, "controller-registered", f"controller {cid}", "registered", controller=cid)

    def _unregister_controller(self, offset: int, f: dict) -> None:
        cid = f["controllerId"]
        if self.image.controllers.pop(cid, None) is None:
            self._inconsistent(offset, "UnregisterControllerRecord", f"controller {cid} is not registered")

    def _voters(self, offset: int, f: dict) -> None:
        voters = []
        for v in f.get("voters") or ():
            feature = v.get("kRaftVersionFeature") or v.get("kraftVersionFeature") or {}
            span = (
                (feature.get("minSupportedVersion", 0), feature.get("maxSupportedVersion", 0))
                if feature
                else None
            )
            voters.append(
                Voter(v.get("voterId", -1), v.get("voterDirectoryId"), _endpoints(v.get("endpoints")), span)
            )
        before = None if self.image.voters is None else [v.voter_id for v in self.image.voters]
        self.image.voters = voters
        after = [v.voter_id for v in voters]
        if before != after and self._wants(offset):
            self._event(
                offset, "voters-changed", "quorum", f"voters {before or '-'} -> {after}", voters=after
            )

    def _kraft_version(self, offset: int, f: dict) -> None:
        self.image.kraft_version = f.get("kRaftVersion", f.get("kraftVersion"))

    def _leader_change(self, offset: int, f: dict) -> None:
        self.image.raft_leader = f.get("leaderId", -1)
