resetFields();
init();
FEATURES.forEach((start) => start());
