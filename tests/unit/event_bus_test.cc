// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <thread>

#include "agent/api/event_bus.h"

namespace nvmeadapt::api {
namespace {

using std::chrono::milliseconds;

v1::Event MakeEvent(v1::EventKind kind, const std::string& controller, uint32_t queue) {
  v1::Event event;
  event.set_kind(kind);
  event.mutable_queue()->set_controller(controller);
  event.mutable_queue()->set_queue(queue);
  event.set_source(v1::SOURCE_UVNVME);
  return event;
}

TEST(EventBus, DeliversInOrderWithSequenceNumbers) {
  EventBus bus;
  auto sub = bus.Subscribe({}, 16);
  for (int i = 0; i < 3; ++i) bus.Publish(MakeEvent(v1::EVENT_KIND_DECISION, "c", 1));
  for (uint64_t i = 1; i <= 3; ++i) {
    auto event = sub->Next(milliseconds(100));
    ASSERT_TRUE(event);
    EXPECT_EQ(event->sequence(), i);
    EXPECT_EQ(event->missed(), 0u);
  }
  EXPECT_FALSE(sub->Next(milliseconds(1)));
}

TEST(EventBus, ASlowReaderLosesTheOldestAndIsToldHowMany) {
  EventBus bus;
  auto slow = bus.Subscribe({}, 4);
  for (int i = 0; i < 10; ++i) bus.Publish(MakeEvent(v1::EVENT_KIND_DECISION, "c", 1));
  auto first = slow->Next(milliseconds(10));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->sequence(), 7u);
  EXPECT_EQ(first->missed(), 6u);
  auto second = slow->Next(milliseconds(10));
  EXPECT_EQ(second->missed(), 0u);
  EXPECT_EQ(slow->total_missed(), 6u);
}

TEST(EventBus, FiltersByKindSourceControllerAndQueue) {
  EventBus bus;
  v1::WatchEventsRequest filter;
  filter.add_kinds(v1::EVENT_KIND_LEVER_ERROR);
  filter.set_controller("nvme0");
  filter.set_queue(2);
  auto sub = bus.Subscribe(filter, 16);
  bus.Publish(MakeEvent(v1::EVENT_KIND_DECISION, "nvme0", 2));
  bus.Publish(MakeEvent(v1::EVENT_KIND_LEVER_ERROR, "nvme1", 2));
  bus.Publish(MakeEvent(v1::EVENT_KIND_LEVER_ERROR, "nvme0", 3));
  bus.Publish(MakeEvent(v1::EVENT_KIND_LEVER_ERROR, "nvme0", 2));
  auto event = sub->Next(milliseconds(10));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->sequence(), 4u);
  EXPECT_FALSE(sub->Next(milliseconds(1)));
  v1::WatchEventsRequest by_source;
  by_source.set_source(v1::SOURCE_KERNEL);
  auto kernel_only = bus.Subscribe(by_source, 4);
  bus.Publish(MakeEvent(v1::EVENT_KIND_DECISION, "nvme0", 2));
  EXPECT_FALSE(kernel_only->Next(milliseconds(1)));
}

TEST(EventBus, DroppedAndCancelledSubscribersAreForgotten) {
  EventBus bus;
  auto kept = bus.Subscribe({}, 1);
  { auto dropped = bus.Subscribe({}, 1); }
  auto cancelled = bus.Subscribe({}, 1);
  cancelled->Cancel();
  bus.Publish(MakeEvent(v1::EVENT_KIND_DECISION, "c", 1));
  EXPECT_EQ(bus.subscribers(), 1u);
  EXPECT_FALSE(cancelled->Next(milliseconds(1)));
}

TEST(EventBus, CancelAllWakesAWaitingReader) {
  EventBus bus;
  auto sub = bus.Subscribe({}, 1);
  std::thread reader([&] { EXPECT_FALSE(sub->Next(milliseconds(10'000))); });
  std::this_thread::sleep_for(milliseconds(20));
  const auto start = std::chrono::steady_clock::now();
  bus.CancelAll();
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(EventBus, EventsFromConcurrentPublishersReachEverySubscriberInSequenceOrder) {
  EventBus bus;
  constexpr int kThreads = 4;
  constexpr int kEach = 5000;
  auto sub = bus.Subscribe({}, kThreads * kEach);
  std::vector<std::thread> publishers;
  for (int t = 0; t < kThreads; ++t) {
    publishers.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) bus.Publish(MakeEvent(v1::EVENT_KIND_DECISION, "c", 1));
    });
  }
  uint64_t last = 0;
  for (int n = 0; n < kThreads * kEach; ++n) {
    auto event = sub->Next(milliseconds(5000));
    ASSERT_TRUE(event) << "event " << n << " did not arrive";
    ASSERT_EQ(event->sequence(), last + 1);
    last = event->sequence();
  }
  for (auto& t : publishers) t.join();
  EXPECT_EQ(sub->total_missed(), 0u);
}

}  // namespace
}  // namespace nvmeadapt::api
